"""Per node group alarms on the GPU metrics (new and fatal XID errors, uncorrectable ECC, row-remap failures,
node-check failures, low utilisation), the encrypted topic they notify, and idle scale-down to the group's min.

Metric sources: the CloudWatch agent's nvidia_gpu measurements aggregated per Auto Scaling group
(dimension AutoScalingGroupName) and gpufleet-gpu-health's DCGM fields (dimension NodeGroup), both in
identity.METRICS_NAMESPACE (bootstrap/scripts/gpu-health.sh; README, Operate). A node with a fatal XID,
uncorrectable ECC, a row-remap failure or a failed node check marks itself unhealthy in its Auto Scaling group;
these alarms tell people.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from gpufleet.stackfile.models import Idle
from gpufleet.stackfile.monitoring import LowUtilisation

from ...bootstrap.operations import DCGM_DOWN_TEXT, DCGM_UP_METRIC, FATAL_XID_TEXT, GPU_UTILISATION_METRIC
from .cluster_parts import AlarmTarget
from .identity import METRICS_NAMESPACE

PERIOD_SECONDS = 60
# Services that publish to the alarm topic (its policy and the stack key's policy let them).
TOPIC_PUBLISHERS = ("cloudwatch.amazonaws.com", "budgets.amazonaws.com")


def alarm_topic(
    name: str, key_arn: pulumi.Input[str], account_id: pulumi.Input[str], emails: list[str], tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> AlarmTarget:
    """The stack's alarm topic, encrypted with the stack key; only this account's alarms and budgets publish, and
    each of `emails` is subscribed (SNS mails each a confirmation link; nothing reaches it until confirmed)."""
    topic = aws.sns.Topic(f"{name}-alarms", kms_master_key_id=key_arn, tags=tags, opts=opts)
    policy = aws.sns.TopicPolicy(
        f"{name}-alarms",
        arn=topic.arn,
        policy=pulumi.Output.all(topic.arn, account_id).apply(lambda v: topic_policy(v[0], v[1])),
        opts=opts,
    )
    for email in emails:
        aws.sns.TopicSubscription(f"{name}-alarms-{email}", topic=topic.arn, protocol="email", endpoint=email,
                                  opts=opts)
    return AlarmTarget(arn=topic.arn, publish_policy=policy)


def topic_policy(topic_arn: str, account_id: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "OwnAlarmsAndBudgetsPublish",
                    "Effect": "Allow",
                    "Principal": {"Service": list(TOPIC_PUBLISHERS)},
                    "Action": "sns:Publish",
                    "Resource": topic_arn,
                    "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
                }
            ],
        },
        sort_keys=True,
    )


def _alarm(
    name: str, description: str, metric: str, dimensions: dict[str, pulumi.Input[str]], statistic: str,
    comparison: str, threshold: float, minutes: int, actions: list[pulumi.Input[str]], tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.cloudwatch.MetricAlarm:
    return aws.cloudwatch.MetricAlarm(
        name,
        alarm_description=description,
        namespace=METRICS_NAMESPACE,
        metric_name=metric,
        dimensions=dimensions,
        statistic=statistic,
        period=PERIOD_SECONDS,
        evaluation_periods=minutes,
        comparison_operator=comparison,
        threshold=threshold,
        # A group at zero nodes publishes nothing: that is not an alarm.
        treat_missing_data="notBreaching",
        alarm_actions=actions,
        tags=tags,
        opts=opts,
    )


def group_alarms(
    name: str, group_name: str, autoscaling: bool, low: LowUtilisation, target: pulumi.Input[str],
    tags: dict[str, str], opts: pulumi.ResourceOptions,
) -> list[aws.cloudwatch.MetricAlarm]:
    """XID, ECC and node-check alarms for one group; low utilisation where the agent aggregates per group
    (Auto Scaling groups: an EC2 Fleet's instances carry no group name for the agent)."""
    health = {"NodeGroup": group_name}
    alarms = [
        # gpu_xid_errors counts the XIDs logged in each minute (not the last one), so the alarm clears after them.
        _alarm(f"{name}-xid", f"{group_name}: GPUs logged new XID errors (most are application errors; the node "
               "stays)", "gpu_xid_errors", health, "Sum", "GreaterThanThreshold", 0, 1, [target], tags, opts),
        _alarm(f"{name}-fatal-xid", f"{group_name}: a GPU logged a fatal XID ({FATAL_XID_TEXT}); the node "
               "leaves its group", "gpu_fatal_xid_errors", health, "Sum", "GreaterThanThreshold", 0, 1, [target],
               tags, opts),
        _alarm(f"{name}-ecc", f"{group_name}: uncorrectable (double-bit) ECC errors on a GPU; the node leaves its "
               "group", "gpu_ecc_uncorrectable", health, "Maximum", "GreaterThanThreshold", 0, 1, [target], tags,
               opts),
        _alarm(f"{name}-row-remap", f"{group_name}: row remapping failed on a GPU; the node leaves its group",
               "gpu_row_remap_failures", health, "Maximum", "GreaterThanThreshold", 0, 1, [target], tags, opts),
        _alarm(f"{name}-nodecheck", f"{group_name}: a node failed gpufleet-nodecheck", "nodecheck_failed", health,
               "Maximum", "GreaterThanThreshold", 0, 1, [target], tags, opts),
        _alarm(f"{name}-dcgm-down", f"{group_name}: {DCGM_DOWN_TEXT}", DCGM_UP_METRIC, health, "Minimum",
               "LessThanThreshold", 1, 1, [target], tags, opts),
    ]
    if autoscaling:
        alarms.append(
            _alarm(f"{name}-low-util", f"{group_name}: GPU utilisation under {low.below_percent}% for "
                   f"{low.for_minutes} minutes", GPU_UTILISATION_METRIC, {"AutoScalingGroupName": group_name},
                   "Average", "LessThanThreshold", low.below_percent, low.for_minutes, [target], tags, opts)
        )
    return alarms


def idle_scale_down(
    name: str, group: pulumi.Output[str], group_name: str, min_size: int, idle: Idle, tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.autoscaling.Policy:
    """A step scaling policy setting the group to its min, run by an alarm on the group's average GPU
    utilisation: Auto Scaling's own mechanism, no controller of gpufleet's. `group` is the group's name as
    the Auto Scaling group outputs it (the policy waits for the group); `group_name` the same, known now."""
    policy = aws.autoscaling.Policy(
        f"{name}-idle",
        autoscaling_group_name=group,
        policy_type="StepScaling",
        adjustment_type="ExactCapacity",
        # One step for any breach of the alarm: the breach is idleness, the answer is min.
        step_adjustments=[aws.autoscaling.PolicyStepAdjustmentArgs(scaling_adjustment=min_size,
                                                                   metric_interval_upper_bound="0")],
        opts=opts,
    )
    _alarm(f"{name}-idle", f"{group_name}: idle (GPU utilisation under {idle.gpu_util_below}% for "
           f"{idle.for_minutes} minutes): scale to {min_size}", GPU_UTILISATION_METRIC,
           {"AutoScalingGroupName": group_name}, "Average", "LessThanThreshold", idle.gpu_util_below,
           idle.for_minutes, [policy.arn], tags, opts)
    return policy
