"""`scheduler: kubernetes` on Azure (AKS): what resolve_cluster and `gpufleet plan` refuse, each exit 2 naming the
field. The stacks are the shipped Azure VM templates with a Kubernetes scheduler, so these tests do not depend on
the AKS templates."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cli_run import run_main
from conftest import read_cluster, write_stack
from kubernetes_lock import SHIPPED_PROFILE
from stack_errors import errors_by_field

from gpufleet.catalog.mig import load_mig_facts
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile.scheduler_checks import aks_gpu_instance_profile

ADMIN = "5f1c6a4e-8d2b-4c1a-9e3f-0a7b6c5d4e3f"
RESERVATION = ("/subscriptions/00000000-0000-4000-8000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/"
               "capacityReservationGroups/crg")


def _aks(stack: str = "azure-infer-a100", scheduler: dict[str, Any] | None = None, **group: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.36", **(scheduler or {})}
    cluster["node_groups"][0].pop("idle", None)  # the VM template's GPU-idle rule: the cluster autoscaler's on AKS
    cluster["storage"]["scratch"] = "none"  # AKS prepares its nodes' disks
    cluster["node_groups"][0].update(group)
    return cluster


def test_an_aks_cluster_on_a_vm_profile_resolves() -> None:
    cluster = _aks(scheduler={"admins": [ADMIN], "endpoint": "public", "public_cidrs": ["203.0.113.0/24"]},
                   gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"}, labels={"example.com/team": "ml"},
                   taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    resolved = resolve_cluster(cluster)
    assert resolved.spec.scheduler.kind == "kubernetes" and resolved.spec.image == "cuda12.8-r580"
    assert resolved.groups[0].spec.gpu_sharing.mig_profile == "all-1g.10gb"


def test_a_regional_aks_cluster_needs_no_zone() -> None:
    cluster = _aks()
    cluster["network"]["zones"] = []
    assert resolve_cluster(cluster).spec.network.zones == []


def test_a_kubernetes_node_profile_is_refused_on_aks() -> None:
    cluster = _aks()
    cluster["image"] = SHIPPED_PROFILE
    errors = errors_by_field(cluster)
    assert "takes no custom image" in errors["image"] and "cuda12.8-r580" in errors["image"]


def test_a_version_aks_does_not_offer_is_refused() -> None:
    errors = errors_by_field(_aks(scheduler={"version": "1.28"}))
    assert list(errors) == ["scheduler.version"]
    assert "not offered on azure" in errors["scheduler.version"] and "1.36, 1.35" in errors["scheduler.version"]


@pytest.mark.parametrize("profile", ["all-balanced", "all-1g.20gb"])
def test_mig_profiles_gpu_instance_profile_cannot_make_are_refused(profile: str) -> None:
    errors = errors_by_field(_aks(gpu_sharing={"mode": "mig", "mig_profile": profile}))
    assert list(errors) == ["node_groups[0].gpu_sharing.mig_profile"]
    message = errors["node_groups[0].gpu_sharing.mig_profile"]
    assert "gpuInstanceProfile" in message and "all-1g.10gb, all-2g.20gb" in message


def test_shared_storage_is_refused_on_aks() -> None:
    errors = errors_by_field(_aks("azure-train-ndh100"))
    assert list(errors) == ["storage.shared"] and "Managed Lustre" in errors["storage.shared"]


def test_mig_on_an_infiniband_group_is_refused_once() -> None:
    cluster = _aks("azure-train-ndh100", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    del cluster["storage"]["shared"]
    errors = errors_by_field(cluster)
    assert list(errors) == ["node_groups[0].gpu_sharing.mode"]
    assert "RDMA" in errors["node_groups[0].gpu_sharing.mode"]


@pytest.mark.parametrize(("gpu", "config", "expected"), [
    (("A100", 80), "all-1g.10gb", "MIG1g"), (("A100", 80), "all-1g.20gb", None), (("A100", 80), "all-7g.80gb", "MIG7g"),
    (("A100", 40), "all-1g.5gb", "MIG1g"), (("A100", 40), "all-1g.10gb", None), (("A100", 40), "all-3g.20gb", "MIG3g"),
    (("A100", 80), "all-balanced", None), (("A100", 80), "all-9g.80gb", None),
])
def test_gpu_instance_profile_of_a_config(gpu: tuple[str, int], config: str, expected: str | None) -> None:
    facts = next(g for g in load_mig_facts().gpus if (g.model, g.memory_gb) == gpu)
    assert aks_gpu_instance_profile(facts.profiles, config) == expected


@pytest.mark.parametrize("admin", ["arn:aws:iam::111122223333:role/Admin", "alice@example.com",
                                   "5f1c6a4e8d2b4c1a9e3f0a7b6c5d4e3f"])
def test_admins_must_be_entra_object_ids(admin: str) -> None:
    errors = errors_by_field(_aks(scheduler={"admins": [ADMIN, admin]}))
    assert list(errors) == ["scheduler.admins[1]"]
    assert "Entra ID object id" in errors["scheduler.admins[1]"]


@pytest.mark.parametrize(("group", "field", "words"), [
    ({"labels": {"kubernetes.azure.com/mode": "user"}}, "node_groups[0].labels", "AKS reserves"),
    ({"labels": {"x.kubernetes.azure.com/a": "b"}}, "node_groups[0].labels", "AKS reserves"),
    ({"taints": [{"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}]},
     "node_groups[0].taints[0].key", "AKS sets"),
    ({"provisioner": "fleet"}, "node_groups[0].provisioner", "AKS agent pools"),
    ({"capacity": "mixed", "on_demand_base": 1}, "node_groups[0].capacity", "one priority"),
    ({"capacity": "spot", "on_demand_base": 1}, "node_groups[0].on_demand_base", "node group of their own"),
    ({"capacity": "reservation", "reservation_id": RESERVATION}, "node_groups[0].capacity", "not built for AKS"),
])
def test_group_settings_aks_refuses(group: dict[str, Any], field: str, words: str) -> None:
    errors = errors_by_field(_aks(**group))
    assert list(errors) == [field]
    assert words in errors[field]


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"gpu_sharing": {"mode": "mig", "mig_profile": "all-balanced"}}, "node_groups[0].gpu_sharing.mig_profile",
     "gpuInstanceProfile"),
    ({"labels": {"kubernetes.azure.com/x": "y"}}, "node_groups[0].labels", "AKS reserves"),
    ({"scheduler": {"admins": ["alice@example.com"]}}, "scheduler.admins[0]", "Entra ID object id"),
    ({"capacity": "mixed", "on_demand_base": 1}, "node_groups[0].capacity", "one priority"),
])
def test_the_entry_point_exits_2_naming_the_field(stacks_dir, monkeypatch: pytest.MonkeyPatch, capsys,
                                                  change: dict[str, Any], field: str, words: str) -> None:
    write_stack(stacks_dir, "aks", _aks(**change), **{"azure-native:location": "eastus"})
    assert run_main(monkeypatch, "plan", "--stack", "aks", "--stacks-dir", str(stacks_dir)) == 2
    text = " ".join(capsys.readouterr().err.split())
    assert field in text and words in text


def test_plan_exits_2_for_mig_on_an_infiniband_pool(stacks_dir, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    cluster = _aks("azure-train-ndh100", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    del cluster["storage"]["shared"]
    write_stack(stacks_dir, "aks-ib", cluster, **{"azure-native:location": "eastus"})
    assert run_main(monkeypatch, "plan", "--stack", "aks-ib", "--stacks-dir", str(stacks_dir)) == 2
    text = " ".join(capsys.readouterr().err.split())
    assert "node_groups[0].gpu_sharing.mode" in text and "RDMA" in text


def test_idle_minutes_are_one_autoscaler_setting_for_every_pool() -> None:
    cluster = _aks(idle={"gpu_util_below": 5, "for_minutes": 60})
    second = copy.deepcopy(cluster["node_groups"][0])
    cluster["node_groups"].append({**second, "name": "second", "idle": {"gpu_util_below": 5, "for_minutes": 30}})
    errors = errors_by_field(cluster)
    assert list(errors) == ["node_groups[1].idle.for_minutes"]
    assert "scale-down-unneeded-time, one value for every pool" in errors["node_groups[1].idle.for_minutes"]
    cluster["node_groups"][1]["idle"]["for_minutes"] = 60
    assert resolve_cluster(cluster).groups[1].spec.idle is not None
