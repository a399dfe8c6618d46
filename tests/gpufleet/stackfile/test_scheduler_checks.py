"""`scheduler` and node group `labels` / `taints`: each wrong combination is exit 2 naming the field, through
resolve_cluster and through `gpufleet plan`.

Kubernetes node profiles come from tests/kubernetes_lock.py (a lock profile with a `kubernetes:` section), so these
tests do not depend on which node images images/lock.yaml ships.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from cli_run import run_main
from conftest import read_cluster, write_stack
from kubernetes_lock import with_kubernetes_profiles
from stack_errors import errors_by_field
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile.scheduler_checks import label_key_problem, taint_key_problem

ADMIN = "arn:aws:iam::111122223333:role/platform/ClusterAdmin"


@pytest.fixture(autouse=True)
def node_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    with_kubernetes_profiles(monkeypatch, {"eks-135": "1.35", "eks-134": "1.34"})


def _eks(stack: str = "aws-train-p5", scheduler: dict[str, Any] | None = None, image: str = "eks-135",
         **group: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.35", **(scheduler or {})}
    cluster["image"] = image
    cluster["network"]["zones"] = ["us-east-1a", "us-east-1b"]  # EKS: subnets in two zones
    cluster["node_groups"][0].update({"zone": "us-east-1a", **group})
    return cluster


def test_a_kubernetes_cluster_with_its_profile_resolves() -> None:
    cluster = _eks(scheduler={"admins": [ADMIN], "endpoint": "public", "public_cidrs": ["203.0.113.0/24"]},
                   labels={"example.com/team": "ml", "node.kubernetes.io/pool": "h100"},
                   taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    resolved = resolve_cluster(cluster)
    assert resolved.spec.scheduler.version == "1.35"
    assert resolved.groups[0].spec.labels == {"example.com/team": "ml", "node.kubernetes.io/pool": "h100"}


def test_a_version_the_table_lacks_is_refused_with_the_offered_ones() -> None:
    errors = errors_by_field(_eks(scheduler={"version": "1.28"}))
    message = errors["scheduler.version"]
    assert "Kubernetes 1.28 is not offered on aws" in message and "1.35, 1.34" in message


def test_a_vm_profile_without_an_eks_twin_under_kubernetes_is_refused() -> None:
    # cuda13.0-r580 has no cuda13.0-r580-eks1.35 in the lock, so nothing is derived and the VM profile is refused.
    errors = errors_by_field(_eks(image="cuda13.0-r580"))
    assert list(errors) == ["image"]
    assert "is a VM image" in errors["image"] and "eks-135" in errors["image"]


def test_a_profile_of_another_version_is_refused() -> None:
    errors = errors_by_field(_eks(image="eks-134"))
    assert list(errors) == ["image"]
    assert "baked for Kubernetes 1.34" in errors["image"] and "scheduler.version 1.35" in errors["image"]


def test_a_vm_cluster_naming_a_kubernetes_profile_is_refused() -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["image"] = "eks-135"
    errors = errors_by_field(cluster)
    assert list(errors) == ["image"]
    assert "is a Kubernetes node image" in errors["image"]


def test_the_control_plane_needs_two_zones() -> None:
    cluster = _eks()
    cluster["network"]["zones"] = ["us-east-1a"]
    errors = errors_by_field(cluster)
    assert list(errors) == ["network.zones"]
    assert "at least 2 zones" in errors["network.zones"]


def test_fleet_is_refused_under_kubernetes() -> None:
    errors = errors_by_field(_eks(provisioner="fleet"))
    assert list(errors) == ["node_groups[0].provisioner"]
    assert "Cluster Autoscaler" in errors["node_groups[0].provisioner"]


@pytest.mark.parametrize(("group", "field"), [
    ({"labels": {"example.com/team": "ml"}}, "node_groups[0].labels"),
    ({"taints": [{"key": "example.com/dedicated", "effect": "NoSchedule"}]}, "node_groups[0].taints"),
])
def test_labels_and_taints_need_kubernetes(group: dict[str, Any], field: str) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0].update(group)
    errors = errors_by_field(cluster)
    assert list(errors) == [field]
    assert "scheduler.kind: kubernetes" in errors[field]


@pytest.mark.parametrize(("key", "words"), [
    ("node-role.kubernetes.io/gpu", "NodeRestriction"),
    ("kubernetes.io/team", "NodeRestriction"),
    ("sub.k8s.io/x", "NodeRestriction"),
    ("node-restriction.kubernetes.io/dedicated", "NodeRestriction"),
    ("topology.kubernetes.io/zone", "set this well-known label"),
    ("node.kubernetes.io/instance-type", "set this well-known label"),
    ("gpufleet.io/zone", "gpufleet's own"),
    ("placement.gpufleet.io/group", "gpufleet's own"),
])
def test_reserved_label_keys_are_refused(key: str, words: str) -> None:
    errors = errors_by_field(_eks(labels={key: "x"}))
    assert list(errors) == ["node_groups[0].labels"]
    assert repr(key) in errors["node_groups[0].labels"] and words in errors["node_groups[0].labels"]


@pytest.mark.parametrize("key", ["example.com/team", "team", "node.kubernetes.io/pool", "kubelet.kubernetes.io/x",
                                 "nvidia.com/gpu.product"])
def test_label_keys_a_kubelet_may_set_pass(key: str) -> None:
    assert label_key_problem(key) is None


@pytest.mark.parametrize(("key", "words"), [
    ("node.kubernetes.io/not-ready", "Kubernetes' own controllers"),
    ("k8s.io/x", "Kubernetes' own controllers"),
    ("gpufleet.io/draining", "gpufleet's own"),
])
def test_reserved_taint_keys_are_refused(key: str, words: str) -> None:
    taints = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}, {"key": key, "effect": "NoExecute"}]
    errors = errors_by_field(_eks(taints=taints))
    assert list(errors) == ["node_groups[0].taints[1].key"]
    assert words in errors["node_groups[0].taints[1].key"]


def test_gpu_taint_passes() -> None:
    assert taint_key_problem("nvidia.com/gpu") is None


@pytest.mark.parametrize(("admin", "words"), [
    ("arn:aws:iam::111122223333:root", "account root"),
    ("arn:aws:iam::111122223333:role/*", "wildcard"),
    ("arn:aws:iam::111122223333:role/admin-?", "wildcard"),
    ("arn:aws:sts::111122223333:assumed-role/Admin/session", "not an IAM role or user ARN"),
    ("arn:aws:iam::111122223333:group/admins", "not an IAM role or user ARN"),
    ("111122223333", "not an IAM role or user ARN"),
])
def test_admins_must_be_role_or_user_arns(admin: str, words: str) -> None:
    errors = errors_by_field(_eks(scheduler={"admins": [ADMIN, admin]}))
    assert list(errors) == ["scheduler.admins[1]"]
    assert words in errors["scheduler.admins[1]"]


@pytest.mark.parametrize("admin", [ADMIN, "arn:aws:iam::111122223333:user/alice",
                                   "arn:aws-us-gov:iam::111122223333:role/Admin"])
def test_role_and_user_arns_pass(admin: str) -> None:
    assert resolve_cluster(_eks(scheduler={"admins": [admin]})).spec.scheduler.admins == [admin]


def test_time_slicing_on_kubernetes_without_rdma_resolves() -> None:
    # The sharing checks (sharing_checks.py) read the real scheduler now: no RDMA, Kubernetes, time-slicing passes.
    cluster = _eks("aws-infer-g6e", rdma="off", gpu_sharing={"mode": "time-slicing", "replicas": 4})
    assert resolve_cluster(cluster).groups[0].spec.gpu_sharing.replicas == 4


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"scheduler": {"version": "1.28"}}, "scheduler.version", "not offered on aws"),
    ({"image": "cuda13.0-r580"}, "image", "is a VM image"),
    ({"image": "eks-134"}, "image", "baked for Kubernetes 1.34"),
    ({"provisioner": "fleet"}, "node_groups[0].provisioner", "Cluster Autoscaler"),
    ({"zone": None, "rdma": "required"}, "node_groups[0].zone", "exactly one zone"),
    ({"labels": {"node-role.kubernetes.io/gpu": ""}}, "node_groups[0].labels", "NodeRestriction"),
    ({"taints": [{"key": "gpufleet.io/x", "effect": "NoSchedule"}]}, "node_groups[0].taints[0].key", "gpufleet"),
    ({"scheduler": {"admins": ["arn:aws:iam::111122223333:root"]}}, "scheduler.admins[0]", "account root"),
])
def test_plan_exits_2_naming_the_field(stacks_dir, change: dict[str, Any], field: str, words: str) -> None:
    write_stack(stacks_dir, "eks", _eks(**change))
    result = CliRunner().invoke(app, ["plan", "--stack", "eks", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert field in text and words in text


def test_the_entry_point_exits_2_naming_the_field(stacks_dir, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    write_stack(stacks_dir, "eks", _eks(labels={"kubernetes.io/role": "gpu"}))
    assert run_main(monkeypatch, "plan", "--stack", "eks", "--stacks-dir", str(stacks_dir)) == 2
    assert "node_groups[0].labels" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(("stack", "service"), [("azure-infer-aks", "AKS"), ("alicloud-infer-ack", "ACK")])
def test_a_local_nvme_raid_is_refused_where_nodes_run_the_services_image(
        stack: str, service: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Nothing of gpufleet boots those nodes: no RAID would be made, and the node-check pod would wait for /scratch.
    cluster = copy.deepcopy(read_cluster(stack))
    assert cluster["storage"]["scratch"] == "none"
    cluster["storage"]["scratch"] = "raid0"
    errors = errors_by_field(cluster)
    assert list(errors) == ["storage.scratch"]
    assert f"{service} nodes run {service}'s own image" in errors["storage.scratch"]
    assert "storage.scratch: none" in errors["storage.scratch"]
    write_stack(tmp_path, "raid", cluster)
    assert run_main(monkeypatch, "plan", "--stack", "raid", "--stacks-dir", str(tmp_path)) == 2
    assert "storage.scratch" in capsys.readouterr().err
