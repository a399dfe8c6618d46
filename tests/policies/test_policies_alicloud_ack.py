"""ACK rules: each fails the bad input and passes the good one, offline through the project's policy runner (camelCase
inputs, as the engine hands pulumi-alicloud's cs inputs to the pack), and the pack over a program that registers a
ManagedKubernetes and a NodePool with the SDK blocks unencrypted secrets and a pool disk without the stack's key."""

from __future__ import annotations

import json
from typing import Any

import pulumi_alicloud as alicloud
import pytest
from stack_rule_args import messages, res, urn

from gpufleet.plan.engine import run_program
from gpufleet.plan.policy_runner import run_policies
from policies.alicloud import ack, ack_rrsa

CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
POOL = "alicloud:cs/nodePool:NodePool"
KEY = "alicloud:kms/key:Key"
ACL = "alicloud:slb/acl:Acl"
ENTRY = "alicloud:slb/aclEntryAttachment:AclEntryAttachment"
BINDING = "pulumi-python:dynamic/alicloud:ApiServerAcl"
ROLE = "alicloud:ram/role:Role"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
KEY_ID = "key-hzz65f1234567890abcd"
GOOD_CLUSTER = {"clusterSpec": "ack.pro.small", "encryptionProviderKey": KEY_ID, "enableRrsa": True,
                "slbInternetEnabled": False}
PROVIDER = "acs:ram::1234567890123456:oidc-provider/ack-rrsa-c0123456789abcdef"


def cluster(**change: Any) -> dict[str, Any]:
    inputs = {**GOOD_CLUSTER, **change}
    return {key: value for key, value in inputs.items() if value is not None}


def cluster_messages(rule: str, **change: Any) -> list[str]:
    return [message for _, message in messages(rule, [res(CLUSTER, "ack", cluster(**change))])]


@pytest.mark.parametrize("rule", ["alicloud-ack-pro-secrets-kms", "alicloud-ack-api-not-open", "alicloud-ack-rrsa-on"])
def test_a_well_built_cluster_passes(rule: str) -> None:
    assert cluster_messages(rule) == []


@pytest.mark.parametrize(("change", "words"), [
    ({"clusterSpec": "ack.standard"}, "not ACK Pro"),
    ({"clusterSpec": None}, "not ACK Pro"),
    ({"encryptionProviderKey": None}, "not encrypted with a KMS key"),
    ({"encryptionProviderKey": " "}, "not encrypted with a KMS key"),
    ({"disableEncryption": True}, "disable_encryption is True"),
])
def test_secrets_not_on_pro_with_a_key_fail(change: dict[str, Any], words: str) -> None:
    (message,) = cluster_messages("alicloud-ack-pro-secrets-kms", **change)
    assert words in message


@pytest.mark.parametrize("change", [{"slbInternetEnabled": None}, {"slbInternetEnabled": True}])
def test_a_public_api_server_without_access_lists_fails(change: dict[str, Any]) -> None:
    (message,) = cluster_messages("alicloud-ack-api-not-open", **change)
    assert "open to every address" in message


def acl(*entries: str, name: str = "api") -> Any:
    return res(ACL, name, {"entryLists": [{"entry": entry, "comment": "admins"} for entry in entries]})


def binding(acl_name: str = "api", acl_type: str = "white", port: int = 6443) -> Any:
    """gpufleet's binding of an ACL to the listener of the cluster's API server CLB (api_server_acl.py)."""
    return res(BINDING, "api-binding", {"load_balancer_id": "lb-1", "listener_port": port, "acl_id": "acl-1",
                                        "acl_type": acl_type, "region": "cn-wulanchabu"},
               property_dependencies={"load_balancer_id": (urn(CLUSTER, "ack"),), "acl_id": (urn(ACL, acl_name),)})


PUBLIC = res(CLUSTER, "ack", cluster(slbInternetEnabled=True))


def test_a_public_api_server_whitelisted_to_named_ranges_passes_and_a_wide_one_fails() -> None:
    private = ["100.104.0.0/16", "10.44.0.0/16"]
    assert messages("alicloud-ack-api-not-open", [PUBLIC, acl(*private, "203.0.113.0/28"), binding()]) == []
    ((where, message),) = messages("alicloud-ack-api-not-open", [PUBLIC, acl(*private, "0.0.0.0/0"), binding()])
    assert where == urn(CLUSTER, "ack") and "0.0.0.0/0" in message


def test_entries_attached_to_the_bound_list_count() -> None:
    entries = [res(ENTRY, f"api-{index}", {"aclId": "acl-1", "entry": entry},
                   property_dependencies={"aclId": (urn(ACL, "api"),)})
               for index, entry in enumerate(["100.104.0.0/16", "20.10.0.0/23"])]
    ((_, message),) = messages("alicloud-ack-api-not-open", [PUBLIC, acl(), *entries, binding()])
    assert "20.10.0.0/23" in message and "more than a /24" in message
    entries[1].inputs["entry"] = "20.10.0.0/24"
    assert messages("alicloud-ack-api-not-open", [PUBLIC, acl(), *entries, binding()]) == []


@pytest.mark.parametrize("resources", [
    [acl("203.0.113.0/28")],  # a list bound to nothing limits nothing
    [acl("203.0.113.0/28"), binding(acl_type="black")],  # a blacklist admits every other address
    [acl("203.0.113.0/28"), binding(port=443)],  # another listener
    [acl("203.0.113.0/28"), acl("198.51.100.0/28", name="other"), binding(acl_name="other-missing")],
])
def test_a_list_that_does_not_whitelist_the_api_servers_listener_leaves_it_open(resources: list[Any]) -> None:
    ((_, message),) = messages("alicloud-ack-api-not-open", [PUBLIC, *resources])
    assert "open to every address" in message


def test_rrsa_off_fails() -> None:
    for change in ({"enableRrsa": None}, {"enableRrsa": False}):
        (message,) = cluster_messages("alicloud-ack-rrsa-on", **change)
        assert "RRSA is off" in message


def pool(name: str = "gpu", **change: Any) -> dict[str, Any]:
    inputs = {"clusterId": "c0123", "systemDiskEncrypted": True, "systemDiskKmsKey": KEY_ID,
              "dataDisks": [{"category": "cloud_essd", "size": 500, "encrypted": "true", "kmsKeyId": KEY_ID}]}
    return {**inputs, **change}


def key() -> Any:
    return res(KEY, "stack-key", {"id": KEY_ID, "description": "stack key"})


def test_pool_disks_on_the_stack_key_pass_and_any_other_fail() -> None:
    assert messages("alicloud-ack-pool-disks-stack-key", [key(), res(POOL, "gpu", pool())]) == []
    cases = {
        "the system disk is not encrypted": pool(systemDiskEncrypted=False),
        "the system disk is encrypted with the default service key": pool(systemDiskKmsKey=None),
        "data_disks[0] is not encrypted": pool(dataDisks=[{"size": 500, "encrypted": "false"}]),
        "data_disks[0] is encrypted with key-other, not the stack's KMS key": pool(
            dataDisks=[{"size": 500, "encrypted": "true", "kmsKeyId": "key-other"}]),
    }
    for words, inputs in cases.items():
        ((where, message),) = messages("alicloud-ack-pool-disks-stack-key", [key(), res(POOL, "gpu", inputs)])
        assert where == urn(POOL, "gpu") and words in message, words


def test_the_stack_key_is_read_from_the_recorded_dependency() -> None:
    inputs = pool(systemDiskKmsKey="key-from-elsewhere", dataDisks=[])
    by_dependency = res(POOL, "gpu", inputs, property_dependencies={"systemDiskKmsKey": (urn(KEY, "stack-key"),)})
    assert messages("alicloud-ack-pool-disks-stack-key", [key(), by_dependency]) == []
    # A key of another stack: the dependency names no key of this one.
    wrong = res(POOL, "gpu", inputs, property_dependencies={"systemDiskKmsKey": (urn(KEY, "elsewhere"),)})
    ((_, message),) = messages("alicloud-ack-pool-disks-stack-key", [key(), wrong])
    assert "not the stack's KMS key" in message


def trust(condition: dict[str, Any], principal: str = PROVIDER) -> str:
    return json.dumps({"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Federated": [principal]},
         "Condition": condition}]})


SCOPED = {"StringEquals": {"oidc:aud": "sts.aliyuncs.com",
                           "oidc:sub": "system:serviceaccount:ack-erdma-controller:ack-erdma-controller"}}


def test_an_rrsa_role_naming_one_service_account_passes_and_a_loose_one_fails() -> None:
    good = res(ROLE, "erdma", {"roleName": "erdma", "assumeRolePolicyDocument": trust(SCOPED)})
    assert messages("alicloud-ack-rrsa-trust-scoped", [good]) == []
    loose = [
        {"StringLike": {"oidc:sub": "system:serviceaccount:*"}},
        {"StringEquals": {"oidc:aud": "sts.aliyuncs.com"}},
        {"StringEquals": {"oidc:sub": "system:serviceaccount:kube-system:*"}},
    ]
    for condition in loose:
        role = res(ROLE, "erdma", {"roleName": "erdma", "assumeRolePolicyDocument": trust(condition)})
        ((_, message),) = messages("alicloud-ack-rrsa-trust-scoped", [role])
        assert "name one service account exactly" in message, condition
    # A role trusting another identity provider is not an RRSA role: not this rule's.
    other = res(ROLE, "ci", {"roleName": "ci", "assumeRolePolicyDocument": trust(
        {"StringLike": {"oidc:sub": "repo:*"}}, "acs:ram::1234567890123456:oidc-provider/GitHub")})
    assert messages("alicloud-ack-rrsa-trust-scoped", [other]) == []


def test_an_rrsa_role_with_a_system_policy_fails() -> None:
    role = res(ROLE, "erdma", {"roleName": "erdma", "assumeRolePolicyDocument": trust(SCOPED)})
    custom = res(ATTACHMENT, "erdma-custom", {"roleName": "erdma", "policyName": "erdma", "policyType": "Custom"})
    system = res(ATTACHMENT, "erdma-system", {"roleName": "erdma", "policyName": "AliyunECSFullAccess",
                                              "policyType": "System"}, property_dependencies={
        "roleName": (urn(ROLE, "erdma"),)})
    assert messages("alicloud-ack-rrsa-custom-policies", [role, custom]) == []
    ((where, message),) = messages("alicloud-ack-rrsa-custom-policies", [role, custom, system])
    assert where == urn(ATTACHMENT, "erdma-system") and "AliyunECSFullAccess" in message
    # A system policy on a role that is not an RRSA role is not this rule's.
    node_role = res(ROLE, "nodes", {"roleName": "nodes", "assumeRolePolicyDocument": json.dumps(
        {"Version": "1", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                        "Principal": {"Service": ["ecs.aliyuncs.com"]}}]})})
    on_nodes = res(ATTACHMENT, "nodes-system", {"roleName": "nodes", "policyName": "AliyunECSFullAccess",
                                                "policyType": "System"})
    assert messages("alicloud-ack-rrsa-custom-policies", [node_role, on_nodes]) == []


def _program(secrets_key: bool, pool_on_stack_key: bool) -> None:
    stack_key = alicloud.kms.Key("stack-key", description="stack key", automatic_rotation="Enabled",
                                 rotation_interval="365d")
    cluster = alicloud.cs.ManagedKubernetes(
        "train", cluster_spec="ack.pro.small", enable_rrsa=True, slb_internet_enabled=False,
        encryption_provider_key=stack_key.id if secrets_key else None, vswitch_ids=["vsw-a"])
    # Otherwise a key the stack does not hold (another stack's, by id).
    disk_key = stack_key.id if pool_on_stack_key else "key-hzz6elsewhere0000000"
    alicloud.cs.NodePool(
        "gpu", cluster_id=cluster.id, instance_types=["ecs.gn7i-c8g1.2xlarge"], system_disk_encrypted=True,
        system_disk_kms_key=disk_key,
        data_disks=[alicloud.cs.NodePoolDataDiskArgs(size=500, category="cloud_essd", encrypted="true",
                                                     kms_key_id=disk_key)])


def _violations(secrets_key: bool, pool_on_stack_key: bool) -> dict[str, list[str]]:
    resources = run_program(lambda: _program(secrets_key, pool_on_stack_key), {}, project="gpufleet",
                            stack="test", region="cn-beijing", zones=["cn-beijing-i"])
    report = run_policies(resources, {}, [rule.policy for rule in (*ack.RULES, *ack_rrsa.RULES)])
    found: dict[str, list[str]] = {}
    for violation in report.violations:
        found.setdefault(violation.policy, []).append(violation.message)
    return found


def test_a_well_built_sdk_cluster_passes_every_ack_rule() -> None:
    assert _violations(secrets_key=True, pool_on_stack_key=True) == {}


def test_the_pack_blocks_unencrypted_secrets_and_pool_disks_off_the_stacks_key() -> None:
    found = _violations(secrets_key=False, pool_on_stack_key=False)
    assert sorted(found) == ["alicloud-ack-pool-disks-stack-key", "alicloud-ack-pro-secrets-kms"]
    assert len(found["alicloud-ack-pool-disks-stack-key"]) == 2  # the system disk and the data disk
