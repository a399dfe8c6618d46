"""The shipped AKS templates at the model level: each loads, validates and passes every check on a VM lock profile
(AKS takes no custom image), and the plan's version warning reads the AKS release calendar."""

from __future__ import annotations

from datetime import date

from conftest import SHIPPED_STACKS

from gpufleet.catalog.mig import load_mig_facts
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.plan.support_warnings import plan_warnings
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import load_stack, stack_path
from gpufleet.stackfile.scheduler_checks import aks_gpu_instance_profile, kubernetes_section


def _resolved(stack: str) -> ResolvedCluster:
    config = load_stack(stack_path(SHIPPED_STACKS, stack), SHIPPED_STACKS)
    return resolve_cluster(config["gpufleet:cluster"])


def test_train_aks_is_nd_h100_v5_on_infiniband_in_one_zone() -> None:
    cluster = _resolved("azure-train-aks")
    spec, (group,) = cluster.spec, cluster.groups
    assert (spec.cloud, spec.scheduler.kind, spec.scheduler.version) == ("azure", "kubernetes", "1.36")
    assert spec.scheduler.endpoint == "public" and kubernetes_section(cluster.profile) is None
    assert group.spec.instance_types == ["Standard_ND96isr_H100_v5"] and group.rdma and group.fabric == "infiniband"
    assert group.zones == ("1",) and group.spec.gpu_sharing.mode == "none"
    assert group.cost is not None and group.cost.max_on_demand <= spec.budget.max_hourly_usd


def test_infer_aks_is_a_regular_base_and_a_spot_mig_pool() -> None:
    cluster = _resolved("azure-infer-aks")
    base, spot = cluster.groups
    assert (base.spec.capacity, spot.spec.capacity) == ("on-demand", "spot")
    assert not base.rdma and not spot.rdma and base.spec.gpu_sharing.mode == "none"
    assert spot.spec.gpu_sharing.mode == "mig"
    facts = load_mig_facts().of(spot.types[0].gpu)
    assert facts is not None
    assert aks_gpu_instance_profile(facts.profiles, str(spot.spec.gpu_sharing.mig_profile)) == "MIG1g"
    total = sum(g.cost.max_on_demand for g in cluster.groups if g.cost is not None)
    assert total <= cluster.spec.budget.max_hourly_usd


def test_the_plan_warns_in_the_last_weeks_of_an_aks_version() -> None:
    spec = _resolved("azure-infer-aks").spec
    assert plan_warnings(spec, date(2026, 11, 25)) == []  # 1.36: supported to 2027-06-30
    older = spec.model_copy(update={"scheduler": spec.scheduler.model_copy(update={"version": "1.34"})})
    (warning,) = plan_warnings(older, date(2026, 11, 25))
    assert warning.startswith("scheduler.version: Kubernetes 1.34 on azure") and "2026-11-30" in warning
