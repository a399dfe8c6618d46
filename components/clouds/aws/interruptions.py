"""Spot interruption warnings and rebalance recommendations to an encrypted SNS topic (EventBridge), for people.

What acts on a warning is on the node: gpufleet-spot-watcher reads it from the instance metadata and runs the
checkpoint hook (the pack's aws-spot-interruption-handler requires it). The topic only tells people why a node went, so
it exists only with people on it: the alarm emails of a created alarm target.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from gpufleet.clouds.aws.stack_model import AwsClusterSpec

INTERRUPTION_EVENTS = ["EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"]


def interruption_readers(spec: AwsClusterSpec) -> list[str]:
    """Who reads the interruption topic: the alarm emails when spot groups and a created alarm target have them."""
    alarms = spec.monitoring.alarms
    if alarms is None or alarms.target != "create" or not any(g.spot for g in spec.node_groups):
        return []
    return list(alarms.emails)


def interruption_topic(
    name: str, key_arn: pulumi.Input[str], readers: list[str], tags: dict[str, str], opts: pulumi.ResourceOptions
) -> aws.sns.Topic:
    topic = aws.sns.Topic(f"{name}-interruptions", kms_master_key_id=key_arn, tags=tags, opts=opts)
    rule = aws.cloudwatch.EventRule(
        f"{name}-interruptions",
        description="Spot interruption warnings and rebalance recommendations",
        event_pattern=json.dumps({"source": ["aws.ec2"], "detail-type": INTERRUPTION_EVENTS}),
        tags=tags,
        opts=opts,
    )
    aws.sns.TopicPolicy(
        f"{name}-interruptions",
        arn=topic.arn,
        policy=pulumi.Output.all(topic.arn, rule.arn).apply(
            lambda arns: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "EventBridgePublishesFromOwnRule",
                            "Effect": "Allow",
                            "Principal": {"Service": "events.amazonaws.com"},
                            "Action": "sns:Publish",
                            "Resource": arns[0],
                            "Condition": {"ArnEquals": {"aws:SourceArn": arns[1]}},
                        }
                    ],
                },
                sort_keys=True,
            )
        ),
        opts=opts,
    )
    aws.cloudwatch.EventTarget(f"{name}-interruptions", rule=rule.name, arn=topic.arn, opts=opts)
    for email in readers:
        aws.sns.TopicSubscription(f"{name}-interruptions-{email}", topic=topic.arn, protocol="email", endpoint=email,
                                  opts=opts)
    return topic
