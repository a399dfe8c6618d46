"""The shipped ACK templates at the model level. As shipped they name cuda12.8-r580, whose driver (580.126.16) is not
one ACK's driver label installs per the driver list read (gpufleet/catalog/ack.yaml): each resolves and its plan warns
at `image` (a real run refuses). On a VM profile at a listed driver (tests/kubernetes_lock.py) each resolves as its
comments say, without that warning."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from conftest import SHIPPED_STACKS
from kubernetes_lock import with_vm_profile

from gpufleet.plan.support_warnings import plan_warnings
from gpufleet.resolve import ResolvedCluster, resolve_cluster
from gpufleet.stackfile import load_stack, stack_path
from gpufleet.stackfile.scheduler_checks import kubernetes_section

STACKS = ("alicloud-train-ack", "alicloud-infer-ack")


def _cluster(stack: str) -> dict[str, Any]:
    return load_stack(stack_path(SHIPPED_STACKS, stack), SHIPPED_STACKS)["gpufleet:cluster"]


def _resolved(stack: str, monkeypatch: pytest.MonkeyPatch) -> ResolvedCluster:
    with_vm_profile(monkeypatch, "ack-570", "570.133.20")
    return resolve_cluster({**_cluster(stack), "image": "ack-570"})


@pytest.mark.parametrize("stack", STACKS)
def test_as_shipped_the_plan_warns_of_the_unlisted_driver(stack: str) -> None:
    resolved = resolve_cluster(_cluster(stack))
    (warning,) = plan_warnings(resolved.spec, date(2026, 11, 27), resolved.profile.driver)
    assert warning.startswith("image: NVIDIA driver 580.126.16 is not in ACK's driver list")


def test_train_ack_is_ebmgn8v_on_erdma_in_one_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _resolved("alicloud-train-ack", monkeypatch)
    spec, (group,) = cluster.spec, cluster.groups
    assert (spec.cloud, spec.scheduler.kind, spec.scheduler.endpoint) == ("alicloud", "kubernetes", "private")
    assert kubernetes_section(cluster.profile) is None
    assert group.spec.instance_types == ["ecs.ebmgn8v.48xlarge"] and group.rdma and group.fabric == "erdma"
    assert len(group.zones) == 1 and group.spec.gpu_sharing.mode == "none"


def test_infer_ack_is_gn7i_memory_isolated_spot_above_an_on_demand_base(monkeypatch: pytest.MonkeyPatch) -> None:
    (group,) = _resolved("alicloud-infer-ack", monkeypatch).groups
    assert group.spec.instance_types == ["ecs.gn7i-c8g1.2xlarge"] and not group.rdma
    assert group.spec.gpu_sharing.mode == "memory-isolated"
    assert (group.spec.capacity, group.spec.on_demand_base) == ("spot", 1) and len(group.zones) == 2


def test_the_plan_warns_in_the_last_weeks_of_an_ack_version(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _resolved("alicloud-infer-ack", monkeypatch).spec
    assert [w for w in plan_warnings(spec, date(2026, 11, 27)) if w.startswith("scheduler.")] == []  # to 2027-05-30
    older = spec.model_copy(update={"scheduler": spec.scheduler.model_copy(update={"version": "1.34"})})
    (warning,) = [w for w in plan_warnings(older, date(2026, 11, 27)) if w.startswith("scheduler.")]
    assert warning.startswith("scheduler.version: Kubernetes 1.34 on alicloud") and "no extended support" in warning
