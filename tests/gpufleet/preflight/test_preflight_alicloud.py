"""Alibaba Cloud preflight against recorded account answers, through the official SDK V2 clients (alicloud_replay)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
import responses
from alicloud_replay import Replay, clients

from gpufleet.lock import load_lock
from gpufleet.lock.model import ImageEntry
from gpufleet.preflight.alicloud import preflight
from gpufleet.preflight.findings import Finding, PreflightUnavailable
from gpufleet.prepare import prepare
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import validate_images
from gpufleet.stackfile.read import STACKS_DIR, load_stack, stack_path

REGION = "cn-wulanchabu"
# A training stack that brings everything it can: each brought id is asked about.
TRAIN: dict[str, Any] = {
    "name": "train", "cloud": "alicloud", "region": REGION, "environment": "dev",
    "network": {"vpc_id": "vpc-0jl1h2u3ytfv4gd5yxo7x", "vswitch_ids": ["vsw-0jlzoqa4ygb1w5upp0csk"],
                "zones": ["cn-wulanchabu-c"], "security_group_id": "sg-0jl6s4ztrpbc9d3k8hle"},
    "image": "cuda12.8-r580",
    "storage": {"kms_key": "key-wlc66c2fa1dw0gjn6jx3r", "scratch": "none"},
    "identity": {"ram_role_name": "train-gpu-node"},
    "node_groups": [{"name": "h20", "instance_types": ["ecs.ebmgn8v.48xlarge"],
                     "size": {"min": 0, "desired": 2, "max": 16}, "capacity": "spot", "on_demand_base": 1,
                     "rdma": "required"}],
    "monitoring": {"gpu_metrics": True, "alarms": {"target": "gpu-oncall"}},
}
CLEAN = {
    "DescribeAccountAttributes": "DescribeAccountAttributes.enough",
    "ListProductQuotas": "ListProductQuotas.ebmgn8v",
    "DescribeAvailableResource": "DescribeAvailableResource.ebmgn8v",
    "DescribeInstanceTypes": "DescribeInstanceTypes.ebmgn8v",
    "DescribeVpcs": "DescribeVpcs.found",
    "DescribeVSwitchAttributes": "DescribeVSwitchAttributes.roomy",
    "DescribeSecurityGroupAttribute": "DescribeSecurityGroupAttribute.accept",
    "DescribeKey": "DescribeKey.enabled",
    "GetKmsInstance": "GetKmsInstance.connected",
    "DescribeImages": "DescribeImages.pinned",
    "DescribeContactGroupList": "DescribeContactGroupList.found",
}


@pytest.fixture
def replay():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        answers = Replay(mock)
        for action, name in CLEAN.items():
            answers.answer(action, name)
        answers.answer("GetRole", "GetRole.disk-encryption", RoleName="AliyunECSDiskEncryptDefaultRole")
        answers.answer("GetRole", "GetRole.node", RoleName="train-gpu-node")
        yield answers
        assert answers.unexpected == [], "a call had no recorded answer"


def run(raw: dict[str, Any] | None = None, image_id: str | None = None) -> list[Finding]:
    cluster = resolve_cluster(copy.deepcopy(raw or TRAIN))
    if image_id is not None:
        lock = load_lock().model_copy(deep=True)
        lock.profiles[cluster.spec.image].images["alicloud"][cluster.spec.region] = ImageEntry(id=image_id)
        cluster = replace(cluster, lock=lock)
    return preflight(cluster, clients(cluster.spec.region))


def only(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def with_changes(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(TRAIN)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = raw
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    return raw


def test_a_clean_account_has_no_findings_and_every_brought_id_is_asked(replay):
    assert run() == []
    asked = {action for action, _ in replay.calls}
    assert asked == {*CLEAN} - {"GetKmsInstance", "DescribeImages"} | {"GetRole"}
    strategies = {p.get("SpotStrategy") for a, p in replay.calls if a == "DescribeAvailableResource"}
    assert strategies == {"SpotAsPriceGo", "NoSpot"}  # 15 spot nodes and the on-demand base
    assert {p.get("RoleName") for a, p in replay.calls if a == "GetRole"} == {
        "AliyunECSDiskEncryptDefaultRole", "train-gpu-node"}


# Quotas --------------------------------------------------------------------------------------------------------------

def test_region_quotas_short_name_the_group_the_numbers_and_the_fix(replay):
    replay.answer("DescribeAccountAttributes", "DescribeAccountAttributes.short")
    findings = run()
    spot, enis = only(findings, "alicloud-quota")
    assert (spot.field, spot.blocking) == ("node_groups[0].size.max", True)
    # 15 spot nodes x 192 vCPUs = 2,880 against 1,000 - 200 in use
    assert "1,000 spot (preemptible) vCPUs" in spot.says and "800 left" in spot.says and "2,880" in spot.says
    assert "Quota Center" in spot.fix
    assert enis.blocking and "20 elastic network interfaces" in enis.says and "32" in enis.says  # 16 nodes x 2 ERIs
    (verification,) = only(findings, "alicloud-account")
    assert (verification.field, verification.blocking) == ("region", True)
    assert "real-name verification" in verification.says


def test_per_type_quota_exhausted_blocks(replay):
    replay.answer("ListProductQuotas", "ListProductQuotas.ebmgn8v.exhausted")
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-quota", "node_groups[0].size.max", True)
    assert "leaves 0" in finding.says and "1 pay-as-you-go nodes (192 vCPUs)" in finding.says
    asked = next(params for action, params in replay.calls if action == "ListProductQuotas")
    assert (asked["ProductCode"], asked["QuotaActionCode"]) == ("ecs-spec", "ecs.ebmgn8v.48xlarge")


def test_per_type_quota_enough_nodes_but_not_vcpus_is_advisory(replay):
    replay.answer("ListProductQuotas", "ListProductQuotas.ebmgn8v.few")
    (finding,) = run()
    assert (finding.check, finding.blocking) == ("alicloud-quota", False)
    assert "leaves 96" in finding.says and "short if it counts vCPUs" in finding.says


def test_no_per_type_quota_row_says_it_was_not_checked(replay):
    replay.answer("ListProductQuotas", "ListProductQuotas.none")
    (finding,) = run()
    assert (finding.field, finding.blocking) == ("node_groups[0].instance_types[0]", False)
    assert "was not checked" in finding.says


# Offerings -----------------------------------------------------------------------------------------------------------

def test_type_not_offered_in_the_rdma_zone_blocks_and_lists_where_it_is(replay):
    replay.answer("DescribeAvailableResource", "DescribeAvailableResource.ebmgn8v.elsewhere",
                  SpotStrategy="SpotAsPriceGo")
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == (
        "alicloud-zone-offering", "node_groups[0].instance_types[0]", True)
    assert "not offered spot (SpotAsPriceGo) in cn-wulanchabu-c" in finding.says
    assert "eRDMA groups use this one zone" in finding.says and "cn-wulanchabu-b" in finding.says


def test_sold_out_for_now_is_advisory_not_replenished_blocks(replay):
    replay.answer("DescribeAvailableResource", "DescribeAvailableResource.ebmgn8v.soldout", SpotStrategy="NoSpot")
    (finding,) = run()
    assert finding.blocking is False and "pay-as-you-go in cn-wulanchabu-c" in finding.says
    assert "WithoutStock" in finding.says
    replay.answer("DescribeAvailableResource", "DescribeAvailableResource.ebmgn8v.closed", SpotStrategy="NoSpot")
    (finding,) = run()
    assert finding.blocking is True and "not replenished" in finding.says


def test_eri_count_below_the_groups_blocks(replay):
    replay.answer("DescribeInstanceTypes", "DescribeInstanceTypes.ebmgn8v.one-eri")
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-eri", "node_groups[0].rdma", True)
    assert "takes 1 ERIs" in finding.says and "attaches 2 per node" in finding.says


# Brought network -----------------------------------------------------------------------------------------------------

def test_missing_vpc_blocks(replay):
    replay.answer("DescribeVpcs", "DescribeVpcs.none")
    (finding,) = run()
    assert (finding.field, finding.blocking) == ("network.vpc_id", True)
    assert "no VPC vpc-0jl1h2u3ytfv4gd5yxo7x" in finding.says


@pytest.mark.parametrize(("answer", "says"), [
    ("DescribeVSwitchAttributes.missing", "no vSwitch vsw-0jlzoqa4ygb1w5upp0csk"),
    ("DescribeVSwitchAttributes.small", "has 20 free addresses; the node groups in cn-wulanchabu-c take 48"),
    ("DescribeVSwitchAttributes.other-zone", "is in cn-wulanchabu-b, but it stands for network.zones[0]"),
    ("DescribeVSwitchAttributes.other-vpc", "belongs to VPC vpc-0jlnotthestacksvpc00"),
])
def test_brought_vswitch_that_does_not_fit_blocks(replay, answer, says):
    replay.answer("DescribeVSwitchAttributes", answer)
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-network", "network.vswitch_ids[0]", True)
    assert says in finding.says


@pytest.mark.parametrize(("answer", "says"), [
    ("DescribeSecurityGroupAttribute.missing", "no security group sg-0jl6s4ztrpbc9d3k8hle"),
    ("DescribeSecurityGroupAttribute.drop", "InnerAccessPolicy Drop and no rule accepting all protocols"),
])
def test_brought_security_group_that_does_not_fit_blocks(replay, answer, says):
    replay.answer("DescribeSecurityGroupAttribute", answer)
    (finding,) = run()
    assert (finding.field, finding.blocking) == ("network.security_group_id", True)
    assert says in finding.says


def test_security_group_with_a_self_rule_passes(replay):
    replay.answer("DescribeSecurityGroupAttribute", "DescribeSecurityGroupAttribute.self-rule")
    assert run() == []


# Keys, roles, images, contacts ---------------------------------------------------------------------------------------

def test_disk_encryption_role_not_authorised_blocks(replay):
    replay.answer("GetRole", "GetRole.missing", RoleName="AliyunECSDiskEncryptDefaultRole")
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-account", "storage.kms_key", True)
    assert "AliyunECSDiskEncryptDefaultRole" in finding.says and "Authorize" in finding.fix


@pytest.mark.parametrize(("answer", "says"), [
    ("GetRole.missing", "no RAM role train-gpu-node"),
    ("GetRole.node-untrusted", "does not let ecs.aliyuncs.com assume it"),
])
def test_brought_node_role_that_does_not_fit_blocks(replay, answer, says):
    replay.answer("GetRole", answer, RoleName="train-gpu-node")
    (finding,) = run()
    assert (finding.field, finding.blocking) == ("identity.ram_role_name", True)
    assert says in finding.says


@pytest.mark.parametrize(("answer", "says"), [
    ("DescribeKey.missing", "no key 'key-wlc66c2fa1dw0gjn6jx3r'"),
    ("DescribeKey.malformed", "no key 'key-wlc66c2fa1dw0gjn6jx3r'"),
    ("DescribeKey.pending-deletion", "is PendingDeletion, not Enabled"),
])
def test_brought_key_that_cannot_encrypt_blocks(replay, answer, says):
    replay.answer("DescribeKey", answer)
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-key", "storage.kms_key", True)
    assert says in finding.says


def test_created_key_needs_a_connected_kms_instance(replay):
    instance = "kst-bjj66c2f9c1qzmfg3l7ul"
    raw = with_changes(storage={"kms_key": "create", "dkms_instance_id": instance, "scratch": "none"})
    assert run(raw) == []
    assert [p.get("KmsInstanceId") for a, p in replay.calls if a == "GetKmsInstance"] == [instance]
    replay.answer("GetKmsInstance", "GetKmsInstance.uninitialized")
    (finding,) = run(raw)
    assert (finding.field, finding.blocking) == ("storage.dkms_instance_id", True)
    assert "is Uninitialized, not Connected" in finding.says


def test_pinned_image_visible_passes_missing_blocks(replay):
    assert run(image_id="m-0jl8d2s3hcz4vq7tx9yb") == []
    assert ("ImageId", "m-0jl8d2s3hcz4vq7tx9yb") in next(p for a, p in replay.calls if a == "DescribeImages").items()
    replay.answer("DescribeImages", "DescribeImages.empty")
    (finding,) = run(image_id="m-0jl8d2s3hcz4vq7tx9yb")
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-image", "image", True)
    assert "pins m-0jl8d2s3hcz4vq7tx9yb" in finding.says


def test_brought_alarm_contact_group_missing_blocks(replay):
    replay.answer("DescribeContactGroupList", "DescribeContactGroupList.other")
    (finding,) = run()
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-alarms", "monitoring.alarms.target", True)
    assert "no alarm contact group 'gpu-oncall'" in finding.says
    replay.answer("DescribeContactGroupList", "DescribeContactGroupList.none")  # HTTP 200 ResourceNotFound: no group
    (finding,) = run()
    assert finding.blocking and "(0 groups listed" in finding.says


def test_contact_group_refusal_inside_http_200_stops_preflight(replay):
    replay.answer("DescribeContactGroupList", "DescribeContactGroupList.refused")
    with pytest.raises(PreflightUnavailable, match=r"cms DescribeContactGroupList refused: InvalidParameter"):
        run()


# Shipped stacks ------------------------------------------------------------------------------------------------------

def test_shipped_inference_stack_created_network_and_placeholder_key(replay):
    """The shipped template as a user forks it: a network gpufleet creates (nothing brought to ask about), gn7i spot
    over two zones, and the key placeholder, which KMS refuses as a KeyId."""
    config = load_stack(stack_path(STACKS_DIR, "alicloud-infer-gn7i"), STACKS_DIR)
    prepared = prepare(config)
    replay.answer("DescribeAccountAttributes", "DescribeAccountAttributes.beijing")
    replay.answer("DescribeAvailableResource", "DescribeAvailableResource.gn7i")
    replay.answer("ListProductQuotas", "ListProductQuotas.none")
    replay.answer("DescribeKey", "DescribeKey.malformed")
    findings = preflight(prepared, clients("cn-beijing"))
    assert [(f.check, f.field, f.blocking) for f in findings] == [
        ("alicloud-quota", "node_groups[0].instance_types[0]", False),  # no per-type quota row: said, not checked
        ("alicloud-key", "storage.kms_key", True),
    ]
    assert "'REPLACE-with-your-kms-key-id'" in findings[1].says
    asked = {action for action, _ in replay.calls}
    assert not asked & {"DescribeVpcs", "DescribeVSwitchAttributes", "DescribeSecurityGroupAttribute",
                        "DescribeContactGroupList", "DescribeInstanceTypes"}
    assert {p.get("SpotStrategy") for a, p in replay.calls if a == "DescribeAvailableResource"} == {"SpotAsPriceGo"}


# Image stacks --------------------------------------------------------------------------------------------------------

IMAGES = {"name": "images", "cloud": "alicloud", "regions": [REGION, "cn-beijing"], "profile": "cuda12.8-r580",
          "build_instance_type": "ecs.g7.2xlarge"}


def test_image_stack_build_type_and_base_image(replay):
    replay.answer("DescribeAvailableResource", "DescribeAvailableResource.g7")
    replay.answer("DescribeImages", "DescribeImages.system")
    spec = validate_images(IMAGES)
    assert preflight(spec, clients(REGION)) == []
    replay.answer("DescribeAvailableResource", "DescribeAvailableResource.g7.soldout")
    replay.answer("DescribeImages", "DescribeImages.system-bios-only")
    build, base = preflight(spec, clients(REGION))
    assert (build.field, build.blocking) == ("build_instance_type", True) and "cn-wulanchabu-c SoldOut" in build.says
    assert (base.field, base.blocking) == ("regions[0]", True) and "uefi" in base.says


# What stops preflight ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "code"), [
    ("error.InvalidAccessKeyId", "InvalidAccessKeyId.NotFound"),
    ("error.SecurityTokenExpired", "InvalidSecurityToken.Expired"),
])
def test_refused_credentials_stop_preflight_with_the_fix(replay, answer, code):
    for action in CLEAN:
        replay.answer(action, answer)
    replay.answer("GetRole", answer)
    with pytest.raises(PreflightUnavailable) as stopped:
        run()
    message = str(stopped.value)
    assert "refused the credentials" in message and code in message and "aliyun configure" in message


def test_throttling_is_retried_then_answers(replay):
    replay.answer("DescribeAccountAttributes", "error.Throttling", "error.Throttling",
                  "DescribeAccountAttributes.short")
    findings = run()
    assert replay.count("DescribeAccountAttributes") == 3
    assert len(only(findings, "alicloud-quota")) == 2  # the answer after the retries was read


def test_persistent_throttling_stops_preflight(replay):
    replay.answer("DescribeAccountAttributes", "error.Throttling")
    with pytest.raises(PreflightUnavailable, match=r"ecs DescribeAccountAttributes still throttled after 5 tries"):
        run()
    assert replay.count("DescribeAccountAttributes") == 5


def test_no_answer_in_time_stops_preflight(replay):
    replay.answer("DescribeVSwitchAttributes", "error.timeout")
    with pytest.raises(PreflightUnavailable, match=r"vpc DescribeVSwitchAttributes: no answer .* after 2 tries"):
        run()
    assert replay.count("DescribeVSwitchAttributes") == 2


def test_denied_and_unknown_region_stop_preflight(replay):
    replay.answer("DescribeSecurityGroupAttribute", "error.Forbidden.RAM")
    with pytest.raises(PreflightUnavailable, match=r"DescribeSecurityGroupAttribute denied: Forbidden.RAM .* ecs:"):
        run()
    replay.answer("DescribeSecurityGroupAttribute", "DescribeSecurityGroupAttribute.accept")
    replay.answer("DescribeAvailableResource", "error.InvalidRegionId")
    with pytest.raises(PreflightUnavailable, match=r"region 'cn-wulanchabu' is unknown.*InvalidRegionId.NotFound"):
        run()


def test_no_credentials_in_the_default_chain_stops_before_any_call(replay, monkeypatch, tmp_path):
    from alibabacloud_credentials.utils import auth_util

    from gpufleet.preflight.alicloud import make_clients

    for name in ("environment_access_key_id", "environment_access_key_secret", "environment_security_token",
                 "environment_credentials_file", "environment_credentials_uri"):
        monkeypatch.setattr(auth_util, name, None)
    monkeypatch.setattr(auth_util, "environment_ecs_metadata_disabled", "true")
    monkeypatch.setattr(auth_util, "environment_cli_profile_disabled", "true")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(PreflightUnavailable, match=r"no Alibaba Cloud credentials: .*aliyun configure"):
        make_clients(REGION)
    assert replay.calls == []


def test_a_key_of_another_account_than_the_callers_blocks(replay):
    # The stack names no ARN of its own, so offline the key's account passes; the caller's account is read from the
    # disk encryption role's ARN (GetRole.disk-encryption: acs:ram::123456789012****:role/...).
    other = f"acs:kms:{REGION}:1111222233334444:key/key-wlc66c2fa1dw0gjn6jx3r"
    (finding,) = only(run(with_changes(storage={"kms_key": other, "scratch": "none"})), "alicloud-key-account")
    assert (finding.field, finding.blocking) == ("storage.kms_key", True)
    assert "account 1111222233334444" in finding.says and "preflight runs as account 123456789012****" in finding.says
    assert only(run(), "alicloud-key-account") == []  # a key id is looked up in the caller's own account
