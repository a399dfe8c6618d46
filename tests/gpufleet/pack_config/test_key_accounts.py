"""Keys are the stack's own account's, or an account the organisation grants: the spec refuses a key (or Azure
vault) of another account than the stack names, and the pack's customer-key-account rule refuses a resource that
names one, on its own; policies/organisation.yaml `settings.customer-key-account.allowedKeyAccounts` is the only
way to allow another, and a stack may only narrow that grant."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import read_cluster, write_stack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stack_rule_args import messages, res

from gpufleet.pack_config.derive import policy_pack_config
from gpufleet.plan.planner import plan_stack
from gpufleet.prepare import prepare
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid, validate_images

RULE = "customer-key-account"
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
aws_accounts = st.from_regex(r"[0-9]{12}", fullmatch=True)
subscriptions = st.uuids().map(str)
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"
KEY_URL = "https://kv1.vault.azure.net/keys/k/0123456789abcdef0123456789abcdef"


def _aws_key(account: str, region: str = "us-east-1") -> str:
    return f"arn:aws:kms:{region}:{account}:key/{KEY_ID}"


def _aws_cluster(own: str, key: str) -> dict[str, Any]:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    raw["storage"]["kms_key"] = key
    raw["identity"]["instance_profile_arn"] = f"arn:aws:iam::{own}:instance-profile/gpu-nodes"
    return raw


def _azure_cluster(own: str, vault_subscription: str) -> dict[str, Any]:
    raw = copy.deepcopy(read_cluster("azure-infer-a100"))
    raw["storage"].update(kms_key=KEY_URL, key_vault_id=f"/subscriptions/{vault_subscription}/resourceGroups/kv/"
                                                      "providers/Microsoft.KeyVault/vaults/kv1")
    raw["identity"]["identity_id"] = (f"/subscriptions/{own}/resourceGroups/id/providers/"
                                      "Microsoft.ManagedIdentity/userAssignedIdentities/nodes")
    return raw


def _errors(raw: dict[str, Any], field: str) -> list[str]:
    try:
        resolve_cluster(raw)
    except SpecInvalid as caught:
        return [str(e) for e in caught.errors if str(e).startswith(field)]
    return []


@SETTINGS
@given(aws_accounts, aws_accounts)
def test_spec_refuses_an_aws_key_of_another_account_unless_granted(organisation: Any, own: str, other: str) -> None:
    organisation("settings: {}\n")
    same = _errors(_aws_cluster(own, _aws_key(own)), "storage.kms_key")
    assert same == []
    if own == other:
        return
    (error,) = _errors(_aws_cluster(own, _aws_key(other)), "storage.kms_key")
    assert f"account {other}, not the stack's ({own})" in error and "allowedKeyAccounts" in error
    organisation(f"settings: {{customer-key-account: {{allowedKeyAccounts: ['{other}']}}}}\n")
    assert _errors(_aws_cluster(own, _aws_key(other)), "storage.kms_key") == []


@SETTINGS
@given(subscriptions, subscriptions)
def test_spec_refuses_an_azure_vault_of_another_subscription_unless_granted(
    organisation: Any, own: str, other: str
) -> None:
    organisation("settings: {}\n")
    assert _errors(_azure_cluster(own, own.upper()), "storage.key_vault_id") == []  # ids compare in any case
    (error,) = _errors(_azure_cluster(own, other), "storage.key_vault_id")
    assert f"account {other}" in error
    organisation(f"settings: {{customer-key-account: {{allowedKeyAccounts: ['{other.upper()}']}}}}\n")
    assert _errors(_azure_cluster(own, other), "storage.key_vault_id") == []


@SETTINGS
@given(aws_accounts, aws_accounts)
def test_image_stack_replicas_are_the_build_keys_account_or_granted(organisation: Any, own: str, other: str) -> None:
    organisation("settings: {}\n")
    raw = {"name": "images", "cloud": "aws", "regions": ["us-east-1", "us-west-2"], "profile": "cuda12.8-r580",
           "build_instance_types": ["g5.2xlarge"], "kms_key": _aws_key(own),
           "replica_kms_keys": {"us-west-2": _aws_key(other, "us-west-2")}}
    if own == other:
        validate_images(raw)
        return
    with pytest.raises(SpecInvalid, match=f"account {other}"):
        validate_images(raw)
    organisation(f"settings: {{customer-key-account: {{allowedKeyAccounts: ['{other}']}}}}\n")
    validate_images(raw)


def _template(key: str, depends_on: tuple[str, ...] = ()) -> Any:
    ebs = {"encrypted": "true", "kmsKeyId": key}
    return res("aws:ec2/launchTemplate:LaunchTemplate", "lt", {"blockDeviceMappings": [{"ebs": ebs}]},
               depends_on, {"blockDeviceMappings": depends_on} if depends_on else None)


@SETTINGS
@given(aws_accounts, aws_accounts, st.sampled_from(["key", "alias/gpu"]))
def test_the_rule_refuses_a_resource_naming_a_key_of_another_account(own: str, other: str, kind: str) -> None:
    key = f"arn:aws:kms:us-east-1:{other}:{kind if kind != 'key' else 'key/' + KEY_ID}"
    found = messages(RULE, [_template(key)], {"stackAccounts": [own]})
    assert bool(found) == (own != other), found
    assert messages(RULE, [_template(key)], {"stackAccounts": [own], "allowedKeyAccounts": [other]}) == []


def test_the_rule_judges_azure_vaults_and_alibaba_keys_and_skips_created_ones() -> None:
    own, other = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
    vault = f"/subscriptions/{other}/resourceGroups/kv/providers/Microsoft.KeyVault/vaults/kv1"
    des = res("azure-native:compute:DiskEncryptionSet", "des",
              {"activeKey": {"keyUrl": KEY_URL, "sourceVault": {"id": vault}}})
    ((_, message),) = messages(RULE, [des], {"stackAccounts": [own]})
    assert message.startswith("activeKey: ") and f"account {other}" in message
    disk = res("alicloud:ecs/ecsDisk:EcsDisk", "d", {"encrypted": True,
                                                     "kmsKeyId": "acs:kms:cn-beijing:5987654321098765:key/key-1"})
    assert messages(RULE, [disk], {"stackAccounts": ["5123456789012345"]})
    key = res("aws:kms/key:Key", "k", {})
    created = _template(_aws_key("999999999999"), depends_on=(key.urn,))
    assert messages(RULE, [key, created], {"stackAccounts": ["111122223333"]}) == []


def test_a_stack_cannot_grant_itself_another_account(tmp_path: Path, organisation: Any) -> None:
    organisation("settings: {customer-key-account: {allowedKeyAccounts: ['444455556666', '777788889999']}}\n")
    raw = _aws_cluster("111122223333", _aws_key("444455556666"))
    config = {"aws:region": "us-east-1", "gpufleet:cluster": raw}

    def pack(policy: dict[str, Any]) -> dict[str, Any]:
        full = {**copy.deepcopy(config), "gpufleet:policy": policy}
        return policy_pack_config(full, prepare(copy.deepcopy(full)), None)[RULE]

    assert pack({})["allowedKeyAccounts"] == ["444455556666", "777788889999"]
    assert pack({RULE: {"allowedKeyAccounts": ["444455556666"]}})["allowedKeyAccounts"] == ["444455556666"]
    assert pack({})["stackAccounts"] == ["111122223333"]
    with pytest.raises(SpecInvalid, match="only the organisation file grants more"):
        pack({RULE: {"allowedKeyAccounts": ["123412341234"]}})
    with pytest.raises(SpecInvalid, match="derived from the stack's spec"):
        pack({RULE: {"stackAccounts": ["444455556666"]}})


def test_a_plan_with_a_granted_key_passes_the_rule(tmp_path: Path, organisation: Any) -> None:
    organisation("settings: {customer-key-account: {allowedKeyAccounts: ['444455556666']}}\n")
    path = write_stack(tmp_path, "granted", _aws_cluster("111122223333", _aws_key("444455556666")))
    result = plan_stack(path)
    assert not [v for v in result.policies["violations"] if v["policy"] == RULE]
    organisation("settings: {}\n")
    with pytest.raises(SpecInvalid, match="account 444455556666"):
        plan_stack(path)


@SETTINGS
@given(st.sampled_from([("aws-train-p5", "aws:allowedAccountIds", "arn:aws:kms:us-east-1:{a}:key/" + KEY_ID, 12),
                        ("alicloud-train-ebmgn8v", "alicloud:accountId", "acs:kms:{r}:{a}:key/key-abc", 16)]),
       st.data())
def test_a_provider_account_setting_names_the_stacks_account(
    tmp_path: Path, organisation: Any, case: tuple[str, str, str, int], data: Any
) -> None:
    """A stack that names no ARN of its own still names its account to its provider: keys are judged against it."""
    stack, key_name, template, digits = case
    own, other = data.draw(st.lists(st.from_regex(rf"[1-9][0-9]{{{digits - 1}}}", fullmatch=True), min_size=2,
                                     max_size=2, unique=True))
    organisation("settings: {}\n")
    raw = copy.deepcopy(read_cluster(stack))
    raw["storage"]["kms_key"] = template.format(a=other, r=raw["region"])
    provider = {key_name: [own] if key_name.startswith("aws") else own}
    path = write_stack(tmp_path, "acct", raw, **provider)
    with pytest.raises(SpecInvalid, match=f"storage.kms_key: .*account {other}"):
        plan_stack(path)
    raw["storage"]["kms_key"] = template.format(a=own, r=raw["region"])
    config = {f"{raw['cloud']}:region": raw["region"], "gpufleet:cluster": raw, **provider}
    assert policy_pack_config(config, prepare(copy.deepcopy(config)), None)[RULE]["stackAccounts"] == [own]
