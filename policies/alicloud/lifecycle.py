"""Alibaba Cloud lifecycle rules: a scale-out hook gates new nodes, a scale-in hook reaches the leaving node.

ESS gives a lifecycle action's token to the hook's notification target only, never to the instance: a
SCALE_OUT hook without `notificationArn` cannot be completed by a node check, so it always ends in its default
result, and with the default CONTINUE (ESS's own default) a node that failed or never ran the check joins.
The target is an ESS ARN `acs:ess:{region}:{account}:{oos|queue|topic}/{name}` (an OOS template that runs the
check, or an MNS queue or topic whose consumer does).

Nothing on an Alibaba node learns of a scale-in (its metadata announces spot reclaims only), so a SCALE_IN hook
without a target only delays the release: the checkpoint never runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, get
from .resource_types import LIFECYCLE_HOOK

NOTIFICATION_ARN = re.compile(r"^acs:ess:[a-z0-9-]+:\d+:(oos|queue|topic)/\S+$")
FIX = (
    "notify an OOS template that runs the node check and completes the action, "
    "acs:ess:{region}:{account-id}:oos/{template_name}"
)


def _target_problems(target: object, why_unset: str, fix: str) -> Iterator[str]:
    """A hook's notification_arn: set (else `why_unset`) and an ESS notification target; unknown offline passes."""
    if target is UNKNOWN:
        return
    if not target:
        yield f"notification_arn is not set: {why_unset}; {fix}"
    elif not isinstance(target, str) or not NOTIFICATION_ARN.match(target):
        yield f"notification_arn {target!r} is not an ESS notification target; {fix}"


def check_scale_out_gated(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if get(props, "lifecycleTransition") != "SCALE_OUT":
        return
    yield from _target_problems(
        get(props, "notificationArn"),
        "ESS gives the lifecycle action token to the notification target only, so no node check can complete this "
        "scale-out hook",
        FIX,
    )
    result = get(props, "defaultResult")
    if result is not UNKNOWN and result in (None, "CONTINUE"):
        shown = "not set (ESS defaults to CONTINUE)" if result is None else "CONTINUE"
        yield (
            f"default_result is {shown}: a node whose check never reported joins the group; set ABANDON so "
            "ESS releases it"
        )


CHECKPOINT_FIX = (
    "notify an OOS template that runs the checkpoint on the leaving nodes and completes the action, "
    "acs:ess:{region}:{account-id}:oos/{template_name}"
)


def check_scale_in_notifies(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if get(props, "lifecycleTransition") != "SCALE_IN":
        return
    yield from _target_problems(
        get(props, "notificationArn"),
        "nothing tells a leaving node it is being removed, so the hook only delays the release and the checkpoint "
        "never runs",
        CHECKPOINT_FIX,
    )


RULES: list[Rule] = [
    resource_rule(
        "alicloud-scale-out-hook-gated",
        "Scale-out lifecycle hooks notify a target that can complete them (the node check gate) and default to "
        "ABANDON.",
        MANDATORY,
        "alicloud",
        [LIFECYCLE_HOOK],
        check_scale_out_gated,
    ),
    resource_rule(
        "alicloud-scale-in-hook-notifies",
        "Scale-in lifecycle hooks notify a target that runs the checkpoint on the leaving nodes.",
        MANDATORY,
        "alicloud",
        [LIFECYCLE_HOOK],
        check_scale_in_notifies,
    ),
]
