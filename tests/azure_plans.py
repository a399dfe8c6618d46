"""Shared by the Azure tests: shipped plans, variants of the shipped stacks, the CLI, recorded resources."""

from __future__ import annotations

import base64
import copy
import gzip
from pathlib import Path
from typing import Any

import libyaml_files
from conftest import read_cluster, write_stack
from conftest import shipped_plan as shipped  # noqa: F401 - the Azure tests' name for the shared one
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.record import RecordedResource

VMSS = "azure-native:compute:VirtualMachineScaleSet"
DES = "azure-native:compute:DiskEncryptionSet"
ROLE = "azure-native:authorization:RoleAssignment"
NSG = "azure-native:network:NetworkSecurityGroup"
AUTOSCALE = "azure-native:monitor:AutoscaleSetting"
TRAIN, INFER = "azure-train-ndh100", "azure-infer-a100"


def one(plan: PlanResult, typ: str) -> RecordedResource:
    """The one resource of a type outside the shared file system (which has its own subnet, key, NSG, identity)."""
    found = [r for r in plan.resources if r.type == typ and "gpufleet:azure:SharedStorage" not in r.urn]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def variant(stack: str = TRAIN, group: dict[str, Any] | None = None, **cluster_changes: Any) -> dict[str, Any]:
    """The shipped stack's cluster with top-level changes and changes to its first node group."""
    cluster = copy.deepcopy(read_cluster(stack))
    for key, value in cluster_changes.items():
        if isinstance(value, dict) and isinstance(cluster.get(key), dict):
            cluster[key] = {**cluster[key], **value}
        else:
            cluster[key] = value
    cluster["node_groups"][0].update(group or {})
    return cluster


def plan_variant(tmp_path: Path, cluster: dict[str, Any]) -> PlanResult:
    return plan_stack(write_stack(tmp_path, "variant", cluster))


def plan_cli(tmp_path: Path, cluster: dict[str, Any]) -> Any:
    """`gpufleet plan --stack-file` on the cluster: exit code and output."""
    path = write_stack(tmp_path, "variant", cluster)
    return CliRunner().invoke(app, ["plan", "--stack-file", str(path), "--format", "json"])



def cloud_init(scale_set: RecordedResource) -> dict[str, Any]:
    """The cloud-config document a scale set's customData carries."""
    data = base64.b64decode(scale_set.inputs["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    assert data.startswith("#cloud-config\n")
    return libyaml_files.load(data)


def node_file(scale_set: RecordedResource, path: str) -> str:
    """A file the node writes, as cloud-init writes it (gz+b64 entries decoded)."""
    entry = next(f for f in cloud_init(scale_set)["write_files"] if f["path"] == path)
    if entry.get("encoding") == "gz+b64":
        return gzip.decompress(base64.b64decode(entry["content"])).decode()
    return entry["content"]


def node_settings(scale_set: RecordedResource) -> dict[str, str]:
    env = node_file(scale_set, "/etc/gpufleet/bootstrap.env")
    return dict(line.split("=", 1) for line in env.splitlines() if not line.startswith("#"))
