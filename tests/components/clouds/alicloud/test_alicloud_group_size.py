"""A launch-template group's size, set through the official Auto Scaling SDK client (signing, sending and
deserialising are the SDK's) against recorded answers (alicloud_replay): ModifyScalingGroup with MinSize and
DesiredCapacity, a refusal stops the deploy naming the group and the code (the OOS execution it replaces counted a
Failed run as done). The plan's side is in test_alicloud_launch_order.py."""

from __future__ import annotations

import base64
from typing import Any

import dill
import pytest
import responses
from alicloud_replay import Replay, static_key
from pulumi.dynamic.dynamic import serialize_provider

from components.clouds.alicloud.group_size import SIZE_TYPE, ScalingGroupSizeProvider, SizingRefused
from gpufleet.clouds.alicloud.mock_answers import new_resource

REGION = "cn-beijing"
PROPS: dict[str, Any] = {"scaling_group_id": "asg-2ze0d2ik6hzqpnw4abcd", "min_size": 0, "desired_capacity": 2,
                         "region": REGION, "__provider": "serialized provider (the engine adds it; never sent)"}


def provider() -> ScalingGroupSizeProvider:
    return ScalingGroupSizeProvider(credential=static_key())


@pytest.fixture
def replay():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield Replay(mock)


def test_create_sizes_the_group_with_modifyscalinggroup(replay: Replay) -> None:
    replay.answer("ModifyScalingGroup", "ModifyScalingGroup.ok")
    result = provider().create(dict(PROPS))
    assert replay.calls == [("ModifyScalingGroup", {"ScalingGroupId": PROPS["scaling_group_id"], "MinSize": "0",
                                                    "DesiredCapacity": "2"})]
    assert result.id == PROPS["scaling_group_id"] and result.outs == PROPS


def test_a_refused_sizing_stops_the_deploy_naming_the_group_and_the_code(replay: Replay) -> None:
    replay.answer("ModifyScalingGroup", "ModifyScalingGroup.inactive-state")
    with pytest.raises(SizingRefused, match=r"ModifyScalingGroup on asg-2ze0d2ik6hzqpnw4abcd \(MinSize 0, "
                                            r"DesiredCapacity 2\) refused: IncorrectScalingGroupStatus"):
        provider().create(dict(PROPS))


def test_a_new_size_resizes_the_same_group_and_another_group_replaces(replay: Replay) -> None:
    replay.answer("ModifyScalingGroup", "ModifyScalingGroup.ok")
    sizes = provider()
    changed = sizes.diff("id", PROPS, {**PROPS, "desired_capacity": 4})
    assert changed.changes and changed.replaces == []
    assert sizes.diff("id", PROPS, {**PROPS, "scaling_group_id": "asg-other"}).replaces == ["scaling_group_id"]
    sizes.update("id", PROPS, {**PROPS, "desired_capacity": 4})
    assert replay.calls[-1][1]["DesiredCapacity"] == "4"


def test_delete_sends_nothing(replay: Replay) -> None:
    provider().delete(PROPS["scaling_group_id"], dict(PROPS))
    assert replay.calls == []


def test_the_provider_survives_the_engines_serialization_and_the_offline_answer_is_creates() -> None:
    loaded = dill.loads(base64.b64decode(serialize_provider(ScalingGroupSizeProvider())))
    assert isinstance(loaded, ScalingGroupSizeProvider) and loaded.credential is None
    physical, outputs = new_resource(SIZE_TYPE, "infer-a10-size", dict(PROPS), REGION)
    assert physical == PROPS["scaling_group_id"] and outputs == {}

