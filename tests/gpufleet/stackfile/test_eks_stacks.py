"""The shipped EKS templates at the model level: each loads, validates and passes every check with its Kubernetes
node profile in the lock (tests/kubernetes_lock.py stands in for the profile until images/lock.yaml ships it)."""

from __future__ import annotations

import pytest
from conftest import SHIPPED_STACKS
from kubernetes_lock import with_kubernetes_profiles

from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import load_stack, stack_path

PROFILE = "cuda12.8-r580-eks1.35"


def _resolved(monkeypatch: pytest.MonkeyPatch, stack: str) -> ResolvedCluster:
    with_kubernetes_profiles(monkeypatch, {PROFILE: "1.35"})
    config = load_stack(stack_path(SHIPPED_STACKS, stack), SHIPPED_STACKS)
    return resolve_cluster(config["gpufleet:cluster"])


def test_train_eks_is_p5_with_efa_in_one_zone_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _resolved(monkeypatch, "aws-train-eks")
    spec, (group,) = cluster.spec, cluster.groups
    assert (spec.scheduler.kind, spec.scheduler.version, spec.scheduler.endpoint) == ("kubernetes", "1.35", "public")
    assert spec.image == PROFILE and len(spec.network.zones) == 2
    assert group.spec.instance_types == ["p5.48xlarge"] and group.rdma and group.fabric == "efa"
    assert group.zones == ("us-east-1a",)
    assert (group.spec.size.min, group.spec.size.desired, group.spec.size.max) == (2, 2, 16)
    assert (group.spec.capacity, group.spec.on_demand_base, group.spec.provisioner) == ("spot", 1, "autoscaling")
    assert group.spec.labels and not group.spec.taints


def test_infer_eks_is_g6e_time_sliced_above_an_on_demand_base(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _resolved(monkeypatch, "aws-infer-eks")
    spec, (group,) = cluster.spec, cluster.groups
    assert (spec.scheduler.kind, spec.scheduler.version) == ("kubernetes", "1.35") and spec.image == PROFILE
    assert group.spec.instance_types[0].startswith("g6e.") and not group.rdma
    assert (group.spec.gpu_sharing.mode, group.spec.gpu_sharing.replicas) == ("time-slicing", 4)
    assert group.spec.capacity == "mixed" and group.spec.on_demand_base >= 1
    assert group.cost is not None and group.cost.max_on_demand <= spec.budget.max_hourly_usd
