"""`scheduler: kubernetes` on Alibaba Cloud (ACK): what resolve_cluster and `gpufleet plan` refuse, each exit 2 naming
the field. The stacks are the shipped Alibaba VM templates with a Kubernetes scheduler and a VM profile at a driver
ACK lists (tests/kubernetes_lock.py), so these tests depend neither on the ACK templates nor on the shipped lock's
drivers."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest
from cli_run import run_main
from conftest import read_cluster, write_stack
from kubernetes_lock import SHIPPED_PROFILE, with_vm_profile
from stack_errors import errors_by_field

from gpufleet.catalog import ack as ack_catalog
from gpufleet.plan.support_warnings import plan_warnings
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile.ack_checks import ack_key_problem

ADMIN = "acs:ram::1234567890123456:role/ClusterAdmin"
ACK_PROFILE = "ack-570"  # cuda12.8-r580 at 570.133.20, a driver ACK's label installs (gpufleet/catalog/ack.yaml)


@pytest.fixture(autouse=True)
def ack_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    with_vm_profile(monkeypatch, ACK_PROFILE, "570.133.20")


def _ack(stack: str = "alicloud-infer-gn7i", scheduler: dict[str, Any] | None = None, **group: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.36", **(scheduler or {})}
    cluster["image"] = ACK_PROFILE
    cluster["node_groups"][0].update(group)
    return cluster


def test_an_ack_cluster_with_memory_isolated_spot_above_a_base_resolves() -> None:
    cluster = _ack(scheduler={"admins": [ADMIN, "acs:ram::1234567890123456:user/alice"]}, on_demand_base=1,
                   gpu_sharing={"mode": "memory-isolated"}, labels={"example.com/team": "ml"},
                   taints=[{"key": "example.com/gpu", "value": "shared", "effect": "NoSchedule"}])
    resolved = resolve_cluster(cluster)
    (group,) = resolved.groups
    assert resolved.spec.scheduler.kind == "kubernetes" and resolved.profile.driver == "570.133.20"
    assert group.spec.gpu_sharing.mode == "memory-isolated" and group.spec.capacity == "spot"
    assert group.spec.on_demand_base == 1


def test_an_erdma_group_on_ack_resolves() -> None:
    (group,) = resolve_cluster(_ack("alicloud-train-ebmgn8v")).groups
    assert group.rdma and group.fabric == "erdma"


def test_a_driver_ack_does_not_list_is_a_plan_warning_naming_the_ones_it_does() -> None:
    cluster = _ack()
    cluster["image"] = "cuda12.8-r580"  # 580.126.16
    resolved = resolve_cluster(cluster)  # ACK's list is dated: no stack error
    warnings = plan_warnings(resolved.spec, date(2026, 11, 27), resolved.profile.driver)
    (image,) = [w for w in warnings if w.startswith("image:")]
    assert "580.126.16" in image and "570.133.20, 550.163.01" in image and "default driver instead" in image
    assert "A real run refuses" in image


def test_a_listed_driver_carries_no_warning() -> None:
    resolved = resolve_cluster(_ack())
    assert not [w for w in plan_warnings(resolved.spec, date(2026, 11, 27), resolved.profile.driver)
                if w.startswith("image:")]


def test_a_kubernetes_node_profile_is_refused_on_ack() -> None:
    cluster = _ack()
    cluster["image"] = SHIPPED_PROFILE
    errors = errors_by_field(cluster)
    assert list(errors) == ["image"] and "ACK's node image" in errors["image"] and ACK_PROFILE in errors["image"]


def test_a_version_ack_does_not_offer_is_refused() -> None:
    errors = errors_by_field(_ack(scheduler={"version": "1.30"}))
    assert list(errors) == ["scheduler.version"] and "1.36, 1.35, 1.34" in errors["scheduler.version"]


@pytest.mark.parametrize(("admin", "words"), [
    ("acs:ram::1234567890123456:role/*", "wildcard"),
    ("acs:ram::1234567890123456:root", "account root"),
    ("arn:aws:iam::111122223333:role/Admin", "not a RAM user or role ARN"),
    ("acs:ram::1234567890123456:group/admins", "not a RAM user or role ARN"),
])
def test_admins_are_ram_users_or_roles(admin: str, words: str) -> None:
    errors = errors_by_field(_ack(scheduler={"admins": [ADMIN, admin]}))
    assert list(errors) == ["scheduler.admins[1]"] and words in errors["scheduler.admins[1]"]


@pytest.mark.parametrize("key", ["ack.aliyun.com/nvidia-driver-version", "alibabacloud.com/nodepool-id",
                                 "aliyun.accelerator/nvidia_name", "ack.node.gpu.schedule"])
def test_labels_ack_sets_itself_are_refused(key: str) -> None:
    errors = errors_by_field(_ack(labels={key: "x"}))
    assert list(errors) == ["node_groups[0].labels"] and key in errors["node_groups[0].labels"]


def test_a_taint_in_an_ack_namespace_is_refused() -> None:
    errors = errors_by_field(_ack(taints=[{"key": "alibabacloud.com/spot", "value": "", "effect": "NoSchedule"}]))
    assert list(errors) == ["node_groups[0].taints[0].key"]


def test_ack_keys_are_judged_by_namespace_not_by_prefix() -> None:
    assert ack_key_problem("example.com/ack.aliyun.com") is None and ack_key_problem("gpu.alibabacloud.com/x")


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"gpu_sharing": {"mode": "mig", "mig_profile": "all-1g.6gb"}}, "node_groups[0].gpu_sharing.mode",
     "none of them MIG"),
    ({"provisioner": "fleet", "spot_max_price": 1.0}, "node_groups[0].provisioner", "ACK node pools"),
    ({"capacity": "reservation", "reservation_id": "crp-0123456789abcdef"}, "node_groups[0].capacity",
     "does not exist on alicloud"),
])
def test_what_an_ack_node_pool_does_not_take(change: dict[str, Any], field: str, words: str) -> None:
    errors = errors_by_field(_ack(**change))
    assert field in errors and words in errors[field]


def test_low_latency_groups_are_refused_on_ack() -> None:
    cluster = _ack()
    cluster["low_latency_groups"] = ["a10"]
    assert "not built for ACK node pools" in errors_by_field(cluster)["low_latency_groups"]


def test_shared_storage_is_refused_on_ack() -> None:
    cluster = _ack()
    cluster["storage"]["shared"] = {"capacity_tib": 1.2}
    assert "not available on alicloud" in errors_by_field(cluster)["storage.shared"]


def test_memory_isolated_on_an_erdma_group_is_refused() -> None:
    errors = errors_by_field(_ack("alicloud-train-ebmgn8v", gpu_sharing={"mode": "memory-isolated"}))
    assert list(errors) == ["node_groups[0].gpu_sharing.mode"]
    assert "RDMA (erdma)" in errors["node_groups[0].gpu_sharing.mode"]


def test_memory_isolated_on_a_family_without_cgpu_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_gn7i_cgpu(monkeypatch)
    errors = errors_by_field(_ack(gpu_sharing={"mode": "memory-isolated"}))
    assert list(errors) == ["node_groups[0].instance_types[0]"]
    assert "cGPU" in errors["node_groups[0].instance_types[0]"]


@pytest.mark.parametrize("stack", ["alicloud-infer-gn7i", "aws-infer-g6e"])
def test_memory_isolated_off_ack_is_refused(stack: str) -> None:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["node_groups"][0]["gpu_sharing"] = {"mode": "memory-isolated"}
    errors = errors_by_field(cluster)
    assert "needs cloud alicloud with scheduler.kind: kubernetes" in errors["node_groups[0].gpu_sharing.mode"]


def test_a_roce_group_is_refused_on_ack() -> None:
    cluster = _ack("alicloud-train-ebmgn8v", instance_types=["ecs.sccgn7ex.32xlarge"])
    errors = errors_by_field(cluster)
    assert "node_groups[0].rdma" in errors and "not eRDMA" in errors["node_groups[0].rdma"]


def _without_gn7i_cgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = ack_catalog.load_ack_facts()
    families = [f for f in facts.cgpu.families if f != "gn7i"]
    changed = facts.model_copy(update={"cgpu": facts.cgpu.model_copy(update={"families": families})})
    monkeypatch.setattr(ack_catalog, "load_ack_facts", lambda *args, **kwargs: changed)
    monkeypatch.setattr("gpufleet.stackfile.ack_checks.load_ack_facts", lambda *args, **kwargs: changed)


@pytest.mark.parametrize(("stack", "change", "field", "words"), [
    ("alicloud-train-ebmgn8v", {"gpu_sharing": {"mode": "memory-isolated"}}, "node_groups[0].gpu_sharing.mode",
     "RDMA"),
    ("alicloud-infer-gn7i", {"gpu_sharing": {"mode": "memory-isolated"}}, "node_groups[0].instance_types[0]",
     "cGPU"),
])
def test_plan_exits_2_naming_the_field(stacks_dir, monkeypatch: pytest.MonkeyPatch, capsys, stack: str,
                                       change: dict[str, Any], field: str, words: str) -> None:
    cluster = _ack(stack, **change)
    if words == "cGPU":
        _without_gn7i_cgpu(monkeypatch)
    path = write_stack(stacks_dir, "ack", cluster, **{"alicloud:region": cluster["region"]})
    assert run_main(monkeypatch, "plan", "--stack-file", str(path)) == 2
    text = " ".join(capsys.readouterr().err.split())
    assert field in text and words in text


def test_idle_is_one_autoscaler_setting_for_every_pool() -> None:
    cluster = _ack()
    second = copy.deepcopy(cluster["node_groups"][0])
    second["name"] = "a10-batch"
    second["idle"] = {"gpu_util_below": 5, "for_minutes": 30}
    cluster["node_groups"][0]["idle"] = {"gpu_util_below": 5, "for_minutes": 60}
    cluster["node_groups"].append(second)
    errors = errors_by_field(cluster)
    assert list(errors) == ["node_groups[1].idle.for_minutes"]
    assert "30: on ACK idle is the cluster autoscaler's setting" in errors["node_groups[1].idle.for_minutes"]
    second["idle"]["for_minutes"] = 60
    resolve_cluster(cluster)  # the same setting on both: accepted


def test_a_public_endpoint_is_whitelisted_on_a_created_network_and_refused_on_a_brought_one() -> None:
    public = {"endpoint": "public", "public_cidrs": ["198.51.100.0/24"]}
    resolve_cluster(_ack(scheduler=public))  # the whitelist holds network.cidr (api_server_acl.py)
    brought = _ack(scheduler=public)
    zones = brought["network"]["zones"]
    brought["network"] = {"zones": zones, "vpc_id": "vpc-2ze0a1b2c3d4e5f6",
                          "vswitch_ids": [f"vsw-2ze0a1b2c3d4e5f{index}" for index in range(len(zones))]}
    errors = errors_by_field(brought)
    assert list(errors) == ["scheduler.endpoint"] and "gpufleet knows only for a network it creates" in errors[
        "scheduler.endpoint"]
    brought["scheduler"] = {"kind": "kubernetes", "version": "1.36"}
    resolve_cluster(brought)  # private on a brought network: accepted


def test_a_minor_without_ack_addon_versions_is_refused_naming_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.catalog.managed_addons import AckAddons
    from gpufleet.stackfile import scheduler_checks

    unread = {"version": None, "unconfirmed": "read it"}
    monkeypatch.setitem(scheduler_checks.ADDON_CATALOGS, "alicloud",
                        lambda: AckAddons(kubernetes={"1.35": dict.fromkeys(AckAddons.NAMES, unread)}))
    errors = errors_by_field(_ack())  # 1.36
    assert list(errors) == ["scheduler.version"]
    assert "gpufleet/catalog/ack_addons.yaml has no add-on versions for Kubernetes 1.36" in errors["scheduler.version"]


ACK_INSTALLED = "cuda12.8-r570-ack"  # the shipped lock's profile whose driver ACK installs (installed_by: ack)


@pytest.mark.parametrize("stack", ["alicloud-infer-gn7i", "aws-train-p5", "aws-train-eks", "azure-infer-a100",
                                   "azure-train-aks"])
def test_a_profile_ack_installs_is_refused_off_ack(stack: str) -> None:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["image"] = ACK_INSTALLED
    errors = errors_by_field(cluster)
    assert list(errors) == ["image"]
    assert errors["image"] == (
        f"profile '{ACK_INSTALLED}' is installed_by: ack: ACK installs its driver on ACK's own node image (the node "
        "pool's driver label) and gpufleet bakes no image of it, so only an ACK cluster (cloud alicloud, "
        f"scheduler.kind kubernetes) can use it; name a profile gpufleet bakes: {ACK_PROFILE}, cuda12.8-r580, "
        "cuda12.8-r580-eks1.35, cuda13.0-r580")  # ACK_PROFILE: this module's baked profile at a listed driver


@pytest.mark.parametrize("stack", ["alicloud-train-ebmgn8v", "azure-infer-aks"])
def test_plan_of_a_cluster_off_ack_on_the_ack_profile_exits_2_at_image(stacks_dir, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys, stack: str) -> None:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["image"] = ACK_INSTALLED
    path = write_stack(stacks_dir, "off-ack", cluster)
    assert run_main(monkeypatch, "plan", "--stack-file", str(path)) == 2
    text = " ".join(capsys.readouterr().err.split())
    assert f"image: profile '{ACK_INSTALLED}' is installed_by: ack" in text


def test_an_ack_cluster_takes_the_ack_profile_without_an_image_entry() -> None:
    cluster = _ack("alicloud-train-ebmgn8v")
    cluster["image"] = ACK_INSTALLED
    resolved = resolve_cluster(cluster)
    assert resolved.profile.installed_by == "ack" and resolved.image is None
    assert not [w for w in plan_warnings(resolved.spec, date(2026, 11, 27), resolved.profile.driver)
                if w.startswith("image:")]
