"""The shipped ACK templates at the model level. As shipped they name cuda12.8-r570-ack, the lock profile whose driver
ACK installs (installed_by: ack): 570.169, one ACK's driver label installs per the driver list read
(gpufleet/catalog/ack.yaml), so each resolves as its comments say without a warning at `image`. On a VM profile whose
driver ACK does not list (today's cuda12.8-r580) the plan warns at `image` (a real run refuses)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from conftest import SHIPPED_STACKS

from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.plan.support_warnings import plan_warnings
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import load_stack, stack_path
from gpufleet.stackfile.scheduler_checks import kubernetes_section

STACKS = ("alicloud-train-ack", "alicloud-infer-ack")


def _cluster(stack: str) -> dict[str, Any]:
    return load_stack(stack_path(SHIPPED_STACKS, stack), SHIPPED_STACKS)["gpufleet:cluster"]


def _resolved(stack: str) -> ResolvedCluster:
    return resolve_cluster(_cluster(stack))


@pytest.mark.parametrize("stack", STACKS)
def test_as_shipped_they_name_the_profile_ack_installs_without_an_image_warning(stack: str) -> None:
    resolved = resolve_cluster(_cluster(stack))
    assert resolved.spec.image == "cuda12.8-r570-ack" and resolved.profile.installed_by == "ack"
    assert resolved.profile.driver == "570.169" and resolved.image is None  # nothing baked: no image entry
    assert [w for w in plan_warnings(resolved.spec, date(2026, 11, 27), resolved.profile.driver)
            if w.startswith("image:")] == []


@pytest.mark.parametrize("stack", STACKS)
def test_on_a_vm_profile_ack_does_not_list_the_plan_warns_as_before(stack: str) -> None:
    resolved = resolve_cluster({**_cluster(stack), "image": "cuda12.8-r580"})
    (warning,) = [w for w in plan_warnings(resolved.spec, date(2026, 11, 27), resolved.profile.driver)
                  if w.startswith("image:")]
    assert warning.startswith("image: NVIDIA driver 580.126.16 is not in ACK's driver list")


def test_train_ack_is_ebmgn8v_on_erdma_in_one_zone() -> None:
    cluster = _resolved("alicloud-train-ack")
    spec, (group,) = cluster.spec, cluster.groups
    assert (spec.cloud, spec.scheduler.kind, spec.scheduler.endpoint) == ("alicloud", "kubernetes", "public")
    assert kubernetes_section(cluster.profile) is None
    assert group.spec.instance_types == ["ecs.ebmgn8v.48xlarge"] and group.rdma and group.fabric == "erdma"
    assert len(group.zones) == 1 and group.spec.gpu_sharing.mode == "none"


def test_infer_ack_is_gn7i_memory_isolated_spot_above_an_on_demand_base() -> None:
    (group,) = _resolved("alicloud-infer-ack").groups
    assert group.spec.instance_types == ["ecs.gn7i-c8g1.2xlarge"] and not group.rdma
    assert group.spec.gpu_sharing.mode == "memory-isolated"
    assert (group.spec.capacity, group.spec.on_demand_base) == ("spot", 1) and len(group.zones) == 2


def test_the_plan_warns_in_the_last_weeks_of_an_ack_version() -> None:
    spec = _resolved("alicloud-infer-ack").spec
    # Supported to 2027-05-30 (the public endpoint's own warning is test_ack_api_server_acl's).
    assert [w for w in plan_warnings(spec, date(2026, 11, 27)) if w.startswith("scheduler.version")] == []
    older = spec.model_copy(update={"scheduler": spec.scheduler.model_copy(update={"version": "1.34"})})
    (warning,) = [w for w in plan_warnings(older, date(2026, 11, 27)) if w.startswith("scheduler.version")]
    assert warning.startswith("scheduler.version: Kubernetes 1.34 on alicloud") and "no extended support" in warning
