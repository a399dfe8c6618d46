"""Alibaba Cloud scale-out gate rule: it fires on a scale-out hook nothing can complete and passes a gated one."""

from __future__ import annotations

from alicloud_rule_args import HOOK, validate
from conftest import of_type, shipped_plan

RULE = "alicloud-scale-out-hook-gated"
OOS_TARGET = "acs:ess:cn-wulanchabu:5123456789012345:oos/gpufleet-train-scale-out-gate"


def scale_out(**props: object) -> dict[str, object]:
    return {"scalingGroupId": "asg-1", "lifecycleTransition": "SCALE_OUT", "heartbeatTimeout": 900, **props}


def test_scale_out_hook_without_a_target_that_defaults_to_continue_fails_twice():
    """The hook as it was before the gate: nothing can complete it and it times out to CONTINUE."""
    messages = validate(RULE, HOOK, scale_out(defaultResult="CONTINUE"))
    assert [m.split(":")[0] for m in messages] == ["notification_arn is not set", "default_result is CONTINUE"]
    assert "no node check can complete this scale-out hook" in messages[0]
    assert "set ABANDON" in messages[1]


def test_default_result_left_to_ess_is_continue_and_fails():
    (message,) = validate(RULE, HOOK, scale_out(notificationArn=OOS_TARGET))
    assert message.startswith("default_result is not set (ESS defaults to CONTINUE)")


def test_a_target_that_is_no_ess_arn_fails():
    props = scale_out(notificationArn="gpufleet-train-scale-out-gate", defaultResult="ABANDON")
    (message,) = validate(RULE, HOOK, props)
    assert message.startswith("notification_arn 'gpufleet-train-scale-out-gate' is not an ESS notification target")


def test_gated_scale_out_hook_passes_and_scale_in_hooks_are_not_read():
    assert validate(RULE, HOOK, scale_out(notificationArn=OOS_TARGET, defaultResult="ABANDON")) == []
    queue = "acs:ess:cn-beijing:5123456789012345:queue/node-checks"
    assert validate(RULE, HOOK, scale_out(notificationArn=queue, defaultResult="ABANDON")) == []
    scale_in = {"scalingGroupId": "asg-1", "lifecycleTransition": "SCALE_IN", "defaultResult": "CONTINUE"}
    assert validate(RULE, HOOK, scale_in) == []


def test_shipped_alibaba_stacks_pass():
    for stack in ("alicloud-train-ebmgn8v", "alicloud-infer-gn7i"):
        plan = shipped_plan(stack)
        assert of_type(plan, HOOK)
        assert [v for v in plan.policies["violations"] if v["policy"] == RULE] == []


SCALE_IN_RULE = "alicloud-scale-in-hook-notifies"


def scale_in(**props: object) -> dict[str, object]:
    return {"scalingGroupId": "asg-1", "lifecycleTransition": "SCALE_IN", "heartbeatTimeout": 420,
            "defaultResult": "CONTINUE", **props}


def test_scale_in_hook_without_a_target_fails_and_one_with_a_runbook_passes():
    """The hook as it was before the checkpoint runbook: it only delayed the release."""
    (message,) = validate(SCALE_IN_RULE, HOOK, scale_in())
    assert message.startswith("notification_arn is not set: nothing tells a leaving node it is being removed")
    (message,) = validate(SCALE_IN_RULE, HOOK, scale_in(notificationArn="gpufleet-train-scale-in-checkpoint"))
    assert "is not an ESS notification target" in message
    target = "acs:ess:cn-wulanchabu:5123456789012345:oos/gpufleet-train-scale-in-checkpoint"
    assert validate(SCALE_IN_RULE, HOOK, scale_in(notificationArn=target)) == []
    assert validate(SCALE_IN_RULE, HOOK, scale_out(defaultResult="ABANDON")) == []  # the gate's rule reads those


def test_shipped_alibaba_stacks_pass_the_scale_in_rule():
    for stack in ("alicloud-train-ebmgn8v", "alicloud-infer-gn7i"):
        plan = shipped_plan(stack)
        assert [v for v in plan.policies["violations"] if v["policy"] == SCALE_IN_RULE] == []
