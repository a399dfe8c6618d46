"""Spot interruption warnings and rebalance recommendations to an encrypted SNS topic (EventBridge)."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

INTERRUPTION_EVENTS = ["EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"]


def interruption_topic(
    name: str, key_arn: pulumi.Input[str], tags: dict[str, str], opts: pulumi.ResourceOptions
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
    return topic
