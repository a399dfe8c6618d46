"""The customer-managed KMS key that encrypts node volumes, logs and the interruption topic; or a brought key."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

# Deletion waits the longest AWS allows, so a mistaken destroy can be undone.
DELETION_WINDOW_DAYS = 30
# What the Auto Scaling service-linked role needs to launch instances with volumes under this key
# (EC2 Auto Scaling user guide, key-policy-requirements-EBS-encryption).
AUTOSCALING_KEY_ACTIONS = [
    "kms:Encrypt", "kms:Decrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext", "kms:DescribeKey",
]
SERVICE_KEY_ACTIONS = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"]


def key_policy(account_id: str, region: str) -> str:
    statements = [
        {
            # The default key policy: lets IAM policies in this account govern the key, so it never
            # becomes unmanageable. Granted to the account root only.
            "Sid": "AccountAdministersKeyThroughIam",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{account_id}:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "AutoScalingUsesKeyForVolumes",
            "Effect": "Allow",
            "Principal": {
                "AWS": f"arn:aws:iam::{account_id}:role/aws-service-role/autoscaling.amazonaws.com/"
                "AWSServiceRoleForAutoScaling"
            },
            "Action": AUTOSCALING_KEY_ACTIONS,
            "Resource": "*",
        },
        {
            "Sid": "AutoScalingCreatesVolumeGrants",
            "Effect": "Allow",
            "Principal": {
                "AWS": f"arn:aws:iam::{account_id}:role/aws-service-role/autoscaling.amazonaws.com/"
                "AWSServiceRoleForAutoScaling"
            },
            "Action": "kms:CreateGrant",
            "Resource": "*",
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
        {
            "Sid": "LogsAndEventsUseKey",
            "Effect": "Allow",
            "Principal": {"Service": [f"logs.{region}.amazonaws.com", "events.amazonaws.com"]},
            "Action": SERVICE_KEY_ACTIONS,
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def cluster_key(
    name: str, region: str, protect: bool, tags: dict[str, str], opts: pulumi.ResourceOptions
) -> aws.kms.Key:
    identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent))
    key = aws.kms.Key(
        f"{name}-key",
        description=f"gpufleet {name}: node volumes, logs and interruption topic",
        enable_key_rotation=True,
        deletion_window_in_days=DELETION_WINDOW_DAYS,
        policy=identity.account_id.apply(lambda account: key_policy(account, region)),
        tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect)),
    )
    aws.kms.Alias(f"{name}-key", name=f"alias/gpufleet/{name}", target_key_id=key.key_id, opts=opts)
    return key
