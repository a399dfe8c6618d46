"""Shipped VM stacks turned slurm, for the stack-file, rendering and daemon tests, and what their plans' tests read:
one named resource, a head node's user data and the files a cloud-config writes."""

from __future__ import annotations

import base64
import copy
import gzip
from typing import Any

import libyaml_files
from conftest import of_type, read_cluster

# The shipped VM training stacks, one per cloud, with a head node type of the cloud (the catalog has no CPU rows
# to default to yet, so the stack names one; these are the clouds' general-purpose 4 vCPU types).
SLURM_STACKS = {
    "aws-train-p5": "m7i.xlarge",
    "azure-train-ndh100": "Standard_D4ds_v5",
    "alicloud-train-ebmgn8v": "ecs.g7.xlarge",
}


def slurm_cluster(stack: str = "aws-train-p5", **scheduler: Any) -> dict[str, Any]:
    """The shipped stack's cluster with scheduler kind slurm and its head node type, plus `scheduler` overrides."""
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "slurm", "head_node": {"instance_type": SLURM_STACKS[stack]}, **scheduler}
    return cluster


def second_group(cluster: dict[str, Any], name: str, **fields: Any) -> dict[str, Any]:
    """A copy of the cluster's first node group under another name, added to the cluster."""
    group = {**copy.deepcopy(cluster["node_groups"][0]), "name": name, **fields}
    cluster["node_groups"].append(group)
    return group


def named(plan: Any, typ: str, name: str) -> Any:
    """The one recorded resource of a type token with this logical name."""
    found = [r for r in of_type(plan, typ) if r.name == name]
    assert len(found) == 1, [r.name for r in of_type(plan, typ)]
    return found[0]


def cloud_config(base64_gzip: str) -> dict[str, Any]:
    """A head node's user data (gzipped, base64) as cloud-init reads it."""
    text = gzip.decompress(base64.b64decode(base64_gzip)).decode()
    assert text.startswith("#cloud-config\n")
    return libyaml_files.load(text)


def files_of(document: dict[str, Any]) -> dict[str, str]:
    """path -> content, gz+b64 entries unpacked as cloud-init does."""
    return {entry["path"]: gzip.decompress(base64.b64decode(entry["content"])).decode()
            if entry.get("encoding") == "gz+b64" else entry["content"] for entry in document["write_files"]}
