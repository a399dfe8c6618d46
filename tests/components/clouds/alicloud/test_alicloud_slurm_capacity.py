"""The Alibaba Cloud side of the Slurm power programs through the official Auto Scaling SDK client
(alibabacloud_ess20220222: signing, sending and deserialising are the SDK's) against recorded answers
(alicloud_replay): the group found by name, DesiredCapacity modified, the named instances removed with or without
lowering the desired capacity."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import responses
from alibabacloud_ess20220222.client import Client
from alibabacloud_tea_openapi.utils_models import Config
from alicloud_replay import Replay, static_key

from components.clouds.alicloud import slurm_capacity
from components.clouds.alicloud.slurm_capacity import ScalingGroupCapacity

RECORDED = Path(__file__).parents[3] / "data" / "slurm" / "alicloud"
PREFLIGHT = Path(__file__).parents[3] / "data" / "preflight" / "alicloud"
REGION = "cn-beijing"
GROUP = "gpufleet-train-dev-h100"
GROUP_ID = "asg-2ze0d2ik6hzqpnw4h100"


@pytest.fixture
def replay() -> Iterator[Replay]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        recorded = Replay(mock, RECORDED, PREFLIGHT)
        recorded.answer("DescribeScalingGroups", "DescribeScalingGroups.h100", ScalingGroupName=GROUP)
        recorded.answer("ModifyScalingGroup", "ModifyScalingGroup.ok")
        recorded.answer("RemoveInstances", "RemoveInstances.ok")
        yield recorded


def capacity() -> ScalingGroupCapacity:
    return ScalingGroupCapacity(Client(Config(credential=static_key(), region_id=REGION)), REGION)


def writes(replay: Replay) -> list[tuple[str, dict[str, str]]]:
    return [(action, params) for action, params in replay.calls if action != "DescribeScalingGroups"]


def test_desired_is_the_named_groups_desired_capacity(replay: Replay) -> None:
    assert capacity().desired(GROUP) == 2
    assert replay.calls == [("DescribeScalingGroups", {"RegionId": REGION, "ScalingGroupName": GROUP})]


def test_set_desired_modifies_the_groups_desired_capacity(replay: Replay) -> None:
    capacity().set_desired(GROUP, 3)
    assert writes(replay) == [("ModifyScalingGroup", {"ScalingGroupId": GROUP_ID, "DesiredCapacity": "3"})]


@pytest.mark.parametrize("lower", [True, False])
def test_give_back_removes_and_releases_the_named_instances(replay: Replay, lower: bool) -> None:
    capacity().give_back(GROUP, ["i-2ze1", "i-2ze2"], lower_desired=lower)
    # The SDK sends a list as InstanceIds.N and a boolean as Python writes it.
    assert writes(replay) == [("RemoveInstances", {
        "RegionId": REGION, "ScalingGroupId": GROUP_ID, "InstanceIds.1": "i-2ze1", "InstanceIds.2": "i-2ze2",
        "DecreaseDesiredCapacity": str(lower), "RemovePolicy": "release"})]


def test_a_group_that_is_not_there_is_named(replay: Replay) -> None:
    replay.answer("DescribeScalingGroups", "DescribeScalingGroups.none", ScalingGroupName=GROUP)
    with pytest.raises(LookupError, match=f"ESS scaling group {GROUP} not found in {REGION}"):
        capacity().desired(GROUP)



def test_the_head_node_signs_with_its_instance_ram_role() -> None:
    # The ECS metadata service as the credentials library reads it: a session token, the role's name, then its STS
    # credentials (ECS user guide, attach-an-instance-ram-role: /latest/meta-data/ram/security-credentials/<role>).
    metadata = "http://100.100.100.200/latest"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        recorded = Replay(mock, RECORDED)
        recorded.answer("DescribeScalingGroups", "DescribeScalingGroups.h100", ScalingGroupName=GROUP)
        mock.add(responses.PUT, f"{metadata}/api/token", body="tok-1")
        mock.add(responses.GET, f"{metadata}/meta-data/ram/security-credentials/", body="gpufleet-slurm-head")
        mock.add(responses.GET, f"{metadata}/meta-data/ram/security-credentials/gpufleet-slurm-head", json={
            "Code": "Success", "AccessKeyId": "STS.NUxxxx", "AccessKeySecret": "role-secret",
            "SecurityToken": "role-session-token", "Expiration": "2099-01-01T00:00:00Z",
            "LastUpdated": "2026-11-28T00:00:00Z"})
        assert slurm_capacity.capacity_in(REGION).desired(GROUP) == 2
        signed = [call.request for call in mock.calls if "aliyuncs.com" in call.request.url]
    assert [request.headers["x-acs-security-token"] for request in signed] == ["role-session-token"]


def test_the_head_node_never_reads_its_role_without_a_metadata_token() -> None:
    # Hardened metadata (slurm_head.py): when the token's PUT fails, no plain GET of the role's credentials follows.
    metadata = "http://100.100.100.200/latest"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        recorded = Replay(mock, RECORDED)
        recorded.answer("DescribeScalingGroups", "DescribeScalingGroups.h100", ScalingGroupName=GROUP)
        mock.add(responses.PUT, f"{metadata}/api/token", status=403)
        mock.add(responses.GET, f"{metadata}/meta-data/ram/security-credentials/", body="gpufleet-slurm-head")
        mock.add(responses.GET, f"{metadata}/meta-data/ram/security-credentials/gpufleet-slurm-head", json={
            "Code": "Success", "AccessKeyId": "STS.NUxxxx", "AccessKeySecret": "role-secret",
            "SecurityToken": "role-session-token", "Expiration": "2099-01-01T00:00:00Z"})
        with pytest.raises(Exception, match="Failed to get token from ECS Metadata Service"):
            slurm_capacity.capacity_in(REGION).desired(GROUP)
        assert [call.request.method for call in mock.calls if "100.100.100.200" in call.request.url] == ["PUT"]
        assert recorded.calls == []
