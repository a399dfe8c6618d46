"""The ACK cluster a `scheduler: kubernetes` Alibaba Cloud stack registers: ACK Pro in the stack's vSwitches and node
security group, secrets on the stack's key with encryption enabled, RRSA, a private API server, control-plane logs in
the stack's log project; Terway at create, the eRDMA controller (after its RRSA role) and ack-ai-installer where the
groups need them; ACK's admin role for the deployer and each admin.

The node pools (ack_pools.py) and the in-cluster layer for cloud alicloud are built on other branches: the fixtures
replace those two steps with nothing, so these plans hold the cluster's own resources."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import of_type, one, read_cluster, write_stack

from components import runtime
from components.clouds.alicloud import ack_addons, ack_in_cluster, ack_steps
from components.clouds.alicloud.ack import service_cidr
from components.clouds.alicloud.ack_steps import ram_principal
from gpufleet.catalog.managed_addons import AckAddons
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.prepare import prepare
from gpufleet.stackfile import SpecInvalid
from gpufleet.stackfile.read import load_stack

CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
PERMISSION = "alicloud:cs/kubernetesPermission:KubernetesPermission"
ROLE = "alicloud:ram/role:Role"
POLICY = "alicloud:ram/policy:Policy"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
PROJECT = "alicloud:log/project:Project"
USER_ADMIN = "acs:ram::5123456789012345:user/alice"
ROLE_ADMIN = "acs:ram::5123456789012345:role/platform-ops"
ERDMA_ACTIONS = {"ecs:DescribeInstances", "ecs:DescribeInstanceTypes", "ecs:DescribeNetworkInterfaces",
                 "ecs:ModifyNetworkInterfaceAttribute", "ecs:CreateNetworkInterface", "ecs:AttachNetworkInterface",
                 "ecs:TagResources"}


def ack_cluster(stack: str = "alicloud-train-ebmgn8v", **changes: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.35", "admins": [USER_ADMIN, ROLE_ADMIN]}
    cluster.update(changes)
    return cluster


@pytest.fixture(scope="module")
def without_pools() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ack_steps, "ack_node_pools", lambda *args, **kwargs: ({}, None))
        patch.setattr(ack_steps, "ack_workloads", lambda *args, **kwargs: None)
        yield


def plan_of(directory: Path, cluster: dict[str, Any]) -> PlanResult:
    return plan_stack(write_stack(directory, "ack", cluster))


@pytest.fixture(scope="module")
def train(tmp_path_factory: pytest.TempPathFactory, without_pools: None) -> PlanResult:
    return plan_of(tmp_path_factory.mktemp("ack-train"), ack_cluster())


@pytest.fixture(scope="module")
def infer(tmp_path_factory: pytest.TempPathFactory, without_pools: None) -> PlanResult:
    return plan_of(tmp_path_factory.mktemp("ack-infer"), ack_cluster("alicloud-infer-gn7i"))


def named(plan: PlanResult, typ: str, name: str) -> Any:
    (found,) = [r for r in plan.resources if r.type == typ and r.name == name]
    return found


def test_the_cluster_is_ack_pro_with_secrets_on_the_stack_key_and_rrsa(train: PlanResult) -> None:
    cluster = one(train, CLUSTER)
    assert cluster.inputs["clusterSpec"] == "ack.pro.small"
    assert cluster.inputs["version"] == "1.35"
    # The key alone does not enable encryption on an update: disable_encryption false goes with it.
    assert cluster.inputs["encryptionProviderKey"] == read_cluster("alicloud-train-ebmgn8v")["storage"]["kms_key"]
    assert cluster.inputs["disableEncryption"] is False
    assert cluster.inputs["enableRrsa"] is True


def test_the_cluster_sits_in_the_stack_network_with_a_private_api_server(train: PlanResult) -> None:
    cluster = one(train, CLUSTER)
    switch = named(train, "alicloud:vpc/switch:Switch", "train-net-cn-wulanchabu-c")
    group = named(train, "alicloud:ecs/securityGroup:SecurityGroup", "train-nodes")
    assert cluster.property_dependencies["vswitchIds"] == (switch.urn,)
    assert cluster.property_dependencies["podVswitchIds"] == (switch.urn,)
    assert cluster.property_dependencies["securityGroupId"] == (group.urn,)
    assert cluster.inputs["slbInternetEnabled"] is False
    assert cluster.inputs["newNatGateway"] is False
    assert not IPv4Network(cluster.inputs["serviceCidr"]).overlaps(IPv4Network("10.42.0.0/16"))


def test_control_plane_logs_go_to_the_stacks_project_for_its_retention(train: PlanResult) -> None:
    cluster = one(train, CLUSTER)
    project = named(train, PROJECT, "train-k8s-logs")
    assert cluster.property_dependencies["controlPlaneLogProject"] == (project.urn,)
    assert cluster.inputs["controlPlaneLogComponents"] == ["apiserver", "kcm", "scheduler", "ccm",
                                                           "controlplane-events"]
    assert cluster.inputs["controlPlaneLogTtl"] == "30"


def test_terway_is_in_the_create_request_and_later_addon_edits_are_not_a_new_cluster(train: PlanResult) -> None:
    cluster = one(train, CLUSTER)
    assert [a["name"] for a in cluster.inputs["addons"]] == ["terway-controlplane", "terway-eniip"]
    assert "addons" in cluster.ignore_changes


def test_a_prod_cluster_is_protected_in_ack_and_in_pulumi(tmp_path: Path, without_pools: None) -> None:
    cluster = one(plan_of(tmp_path, ack_cluster(environment="prod")), CLUSTER)
    assert cluster.inputs["deletionProtection"] is True
    assert cluster.protect is True


def test_the_erdma_controller_prefers_ofed_and_waits_for_its_rrsa_role(train: PlanResult) -> None:
    addon = named(train, ADDON, "train-ack-erdma-controller")
    assert addon.inputs["name"] == "ack-erdma-controller"
    assert json.loads(addon.inputs["config"]) == {"agent": {"preferDriver": "ofed", "allocateAllDevices": True}}
    assert "version" not in addon.inputs  # no citable version: null in the plan, a real run refuses
    assert addon.property_dependencies["clusterId"] == (one(train, CLUSTER).urn,)
    assert named(train, ATTACHMENT, "train-rrsa-erdma").urn in addon.depends_on


def test_the_rrsa_role_trusts_only_the_controllers_service_account_of_this_cluster(train: PlanResult) -> None:
    role, cluster = named(train, ROLE, "train-rrsa-erdma"), one(train, CLUSTER)
    (statement,) = json.loads(role.inputs["assumeRolePolicyDocument"])["Statement"]
    assert statement["Action"] == "sts:AssumeRole"
    assert len(statement["Principal"]["Federated"]) == 1
    conditions = statement["Condition"]["StringEquals"]
    assert set(conditions) == {"oidc:iss", "oidc:aud", "oidc:sub"}
    assert conditions["oidc:aud"] == "sts.aliyuncs.com"
    assert conditions["oidc:sub"] == "system:serviceaccount:ack-erdma-controller:ack-erdma-controller"
    # The OIDC provider and issuer are the cluster's rrsa_metadata, its name the one the add-on looks for.
    assert role.property_dependencies["assumeRolePolicyDocument"] == (cluster.urn,)
    assert role.property_dependencies["roleName"] == (cluster.urn,)
    assert role.inputs["roleName"].startswith("ack-erdma-controller-")


def test_the_rrsa_policy_lists_the_controllers_actions_and_no_wildcard(train: PlanResult) -> None:
    policy = named(train, POLICY, "train-rrsa-erdma")
    (statement,) = json.loads(policy.inputs["policyDocument"])["Statement"]
    assert set(statement["Action"]) == ERDMA_ACTIONS
    assert not any("*" in action for action in statement["Action"])
    attachment = named(train, ATTACHMENT, "train-rrsa-erdma")
    assert attachment.property_dependencies["policyName"] == (policy.urn,)
    assert attachment.property_dependencies["roleName"] == (named(train, ROLE, "train-rrsa-erdma").urn,)


def test_a_cluster_without_erdma_or_sharing_has_no_controller_installer_or_rrsa_role(infer: PlanResult) -> None:
    # only the metrics add-on (monitoring.gpu_metrics is on): components/clouds/alicloud/ack_alerts.py
    assert [a.inputs["name"] for a in of_type(infer, ADDON)] == ["ack-arms-prometheus"]
    assert not [r for r in of_type(infer, ROLE) if r.name.startswith("train-rrsa") or "rrsa" in r.name]


def test_a_sharing_group_brings_ack_ai_installer(tmp_path: Path, without_pools: None) -> None:
    cluster = ack_cluster("alicloud-infer-gn7i")
    cluster["node_groups"][0]["gpu_sharing"] = {"mode": "time-slicing", "replicas": 4}
    names = [a.inputs["name"] for a in of_type(plan_of(tmp_path, cluster), ADDON)]
    assert names == ["ack-ai-installer", "ack-arms-prometheus"]


def test_the_deployer_and_each_admin_get_acks_admin_role_on_this_cluster(train: PlanResult) -> None:
    cluster = one(train, CLUSTER)
    grants = sorted(of_type(train, PERMISSION), key=lambda r: r.name)
    assert [g.name for g in grants] == ["train-ack-admin-0", "train-ack-admin-1", "train-ack-admin-2"]
    roles = []
    for grant in grants:
        (permission,) = grant.inputs["permissions"]
        assert (permission["roleType"], permission["roleName"]) == ("cluster", "admin")
        assert grant.property_dependencies["permissions"] == (cluster.urn,)
        roles.append(permission["isRamRole"])
    # The offline deployer is a RAM user; then alice (a user) and platform-ops (a role).
    assert roles == [False, False, True]


def resolved_of(path: Path) -> Any:
    return prepare(load_stack(path))


def test_a_real_run_refuses_addons_without_a_pinned_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resolved = resolved_of(write_stack(tmp_path, "ack", ack_cluster()))
    monkeypatch.setattr(runtime, "running_offline", lambda: True)
    ack_addons.refuse_unpinned_addons(resolved)  # offline: the plan shows them
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError) as refused:
        ack_addons.refuse_unpinned_addons(resolved)
    message = str(refused.value)
    assert "gpufleet/catalog/ack_addons.yaml kubernetes.1.35: 4 add-on(s) have no version" in message
    named = [name for name in AckAddons.NAMES if f"{name}: read it with ListAddons" in message]
    assert named == ["terway-controlplane", "terway-eniip", "ack-erdma-controller", "ack-arms-prometheus"]


def pinned(minor: str) -> AckAddons:
    pin = {"version": "v1.0.0", "source": "a test"}
    return AckAddons(kubernetes={minor: dict.fromkeys(AckAddons.NAMES, pin)})


def test_each_addon_is_installed_at_the_version_the_catalog_pins_for_the_minor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without_pools: None,
) -> None:
    monkeypatch.setattr(ack_addons, "load_ack_addons", lambda: pinned("1.35"))
    plan = plan_of(tmp_path, ack_cluster(monitoring={**read_cluster("alicloud-train-ebmgn8v")["monitoring"],
                                                     "gpu_metrics": True}))
    created = {addon["name"]: addon.get("version") for addon in one(plan, CLUSTER).inputs["addons"]}
    assert created == {"terway-controlplane": "v1.0.0", "terway-eniip": "v1.0.0"}
    later = {addon.inputs["name"]: addon.inputs.get("version") for addon in of_type(plan, ADDON)}
    assert later == {"ack-erdma-controller": "v1.0.0", "ack-arms-prometheus": "v1.0.0"}
    resolved = resolved_of(write_stack(tmp_path, "ack", ack_cluster()))
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    monkeypatch.setattr(ack_addons, "resolved_kubernetes_version", lambda service, minor: f"{minor}.5-aliyun.1")
    assert ack_addons.refuse_unpinned_addons(resolved) is None


def test_the_cluster_takes_the_full_version_read_and_up_refuses_a_minor_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without_pools: None,
) -> None:
    monkeypatch.setattr(ack_addons, "load_ack_addons", lambda: pinned("1.35"))
    # Nothing read: the plan shows the minor; `pulumi up` refuses it, a preview warns.
    assert one(plan_of(tmp_path, ack_cluster()), CLUSTER).inputs["version"] == "1.35"
    resolved = resolved_of(write_stack(tmp_path, "ack", ack_cluster()))
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError, match=r"scheduler\.version 1\.35: ACK's full version for it was not read"):
        ack_addons.refuse_unpinned_addons(resolved)
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: True)
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    ack_addons.refuse_unpinned_addons(resolved)
    assert "`pulumi up` stops here" in warned[0]
    # Read: the create request carries ACK's full version, as the provider stores it.
    monkeypatch.setattr(runtime, "running_offline", lambda: True)
    monkeypatch.setattr(ack_steps, "resolved_kubernetes_version", lambda service, minor: f"{minor}.5-aliyun.1")
    assert one(plan_of(tmp_path, ack_cluster()), CLUSTER).inputs["version"] == "1.35.5-aliyun.1"


def test_a_real_run_refuses_a_driver_acks_list_does_not_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = ack_cluster()
    cluster["image"] = "cuda12.8-r580"  # 580.126.16: not in gpufleet/catalog/ack.yaml's drivers
    resolved = resolved_of(write_stack(tmp_path, "ack", cluster))
    monkeypatch.setattr(runtime, "running_offline", lambda: True)
    ack_in_cluster.refuse_unlisted_driver(resolved)  # offline: the plan warns
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError, match=r"image: NVIDIA driver 580\.126\.16 is not in ACK's driver list"):
        ack_in_cluster.refuse_unlisted_driver(resolved)


def test_the_service_range_steps_aside_from_the_vpc() -> None:
    assert service_cidr(IPv4Network("10.42.0.0/16")) == "172.21.0.0/20"
    assert service_cidr(IPv4Network("172.16.0.0/12")) == "192.168.0.0/20"
    assert service_cidr(None) == "172.21.0.0/20"


def test_ram_principals_are_users_or_roles_and_nothing_else() -> None:
    assert ram_principal(USER_ADMIN) == (False, "alice")
    assert ram_principal(ROLE_ADMIN) == (True, "platform-ops")
    assert ram_principal("acs:ram::5123456789012345:assumed-role/deployer/session-1") == (True, "deployer")
    assert ram_principal("acs:ram::5123456789012345:root") is None


def test_the_erdma_config_is_checked_against_the_schema_ack_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without_pools: None,
) -> None:
    from datetime import datetime, timezone

    from gpufleet.lock import DEFAULT_LOCK_PATH, loader
    from gpufleet.lock.facts import ManagedVersionFact, ResolvedFacts
    from gpufleet.lock_resolve import write_facts

    def with_schema(schema: dict[str, Any]) -> None:
        lock = tmp_path / f"lock-{len(list(tmp_path.glob('lock-*.yaml')))}.yaml"
        lock.write_text(DEFAULT_LOCK_PATH.read_text())
        fact = ManagedVersionFact(source="cs:ListAddons (test record)", version="v1.0.0", config_schema=schema,
                                  read_at=datetime(2026, 11, 1, tzinfo=timezone.utc))
        write_facts(lock, ResolvedFacts(managed={"ack/1.35/addon/ack-erdma-controller": fact}))
        monkeypatch.setattr(loader.load_lock, "__defaults__", (lock,))

    # A schema in ListAddons' form that takes only the compat driver: the stack's ofed config is refused (exit 2).
    with_schema({"type": "object", "properties": {"agent": {"type": "object", "properties": {
        "preferDriver": {"enum": ["compat", "default"]}, "allocateAllDevices": {"type": "boolean"}}}}})
    with pytest.raises(SpecInvalid) as refused:
        plan_of(tmp_path, ack_cluster())
    assert "ack-erdma-controller config" in str(refused.value)
    assert "agent.preferDriver: 'ofed' is not one of ['compat', 'default']" in str(refused.value)
    # One that takes it: the plan goes on.
    with_schema({"type": "object", "properties": {"agent": {"type": "object", "properties": {
        "preferDriver": {"enum": ["compat", "default", "ofed"]}}}}})
    assert named(plan_of(tmp_path, ack_cluster()), ADDON, "train-ack-erdma-controller")
