"""The one KMS key-policy builder for gpufleet's keys (the cluster key and the image key), and the
service-linked roles those policies name.

KMS refuses a key policy whose principal does not exist, and the Auto Scaling and EC2 Fleet
service-linked roles only appear in an account once a group or fleet was made there; so a stack that
creates a key also creates the roles the policy names, unless it says they exist.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class ServiceRole:
    """An AWS service-linked role that launches instances whose volumes the key encrypts."""

    service: str
    """The service principal it is linked to, e.g. autoscaling.amazonaws.com."""
    role_name: str
    """The role's fixed name under /aws-service-role/<service>/."""
    short: str
    """A short name for resource names."""

    def arn(self, account_id: str) -> str:
        return f"arn:aws:iam::{account_id}:role/aws-service-role/{self.service}/{self.role_name}"


AUTOSCALING = ServiceRole("autoscaling.amazonaws.com", "AWSServiceRoleForAutoScaling", "autoscaling")
EC2_FLEET = ServiceRole("ec2fleet.amazonaws.com", "AWSServiceRoleForEC2Fleet", "ec2fleet")

# What a service-linked role needs to launch instances with EBS volumes (or from AMIs) under a
# customer-managed key (EC2 Auto Scaling user guide, key-policy-requirements-EBS-encryption; the
# EC2 Fleet guide asks the same of AWSServiceRoleForEC2Fleet).
SERVICE_ROLE_KEY_ACTIONS = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]
# CloudWatch Logs user guide, encrypt-log-data-kms.
LOGS_KEY_ACTIONS = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
# EventBridge user guide: a rule publishing to an SNS topic encrypted with a customer-managed key.
EVENTS_KEY_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey"]
# CloudWatch alarms and AWS Budgets publishing to an SNS topic under a customer-managed key (SNS developer
# guide, "Configure AWS KMS permissions for AWS services": kms:Decrypt and kms:GenerateDataKey*).
TOPIC_PUBLISHER_KEY_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey*"]
TOPIC_PUBLISHER_SIDS = {
    "cloudwatch.amazonaws.com": "CloudWatchAlarmsPublishToEncryptedTopic",
    "budgets.amazonaws.com": "BudgetsPublishToEncryptedTopic",
}


@dataclass(frozen=True)
class LogGroupGrant:
    """One CloudWatch Logs group that encrypts with the key."""

    region: str
    """Region of the log group (the Logs principal is regional)."""
    name: str
    """Log group name, known before the group exists so the key need not wait for it."""


def key_policy(
    account_id: str,
    roles: Sequence[ServiceRole],
    log_group: LogGroupGrant | None = None,
    events: bool = False,
    publishers: Sequence[str] = (),
) -> str:
    """The key policy: IAM administers the key; each role, the log group and EventBridge may use it;
    publishers (service principals of TOPIC_PUBLISHER_SIDS) publish to a topic under it."""
    statements: list[dict[str, object]] = [
        {
            # The default key policy: lets IAM policies in this account govern the key, so it never
            # becomes unmanageable. Granted to the account root only.
            "Sid": "AccountAdministersKeyThroughIam",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{account_id}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ]
    for role in roles:
        principal = {"AWS": role.arn(account_id)}
        statements += [
            {
                "Sid": f"{role.role_name}UsesKey",
                "Effect": "Allow",
                "Principal": principal,
                "Action": SERVICE_ROLE_KEY_ACTIONS,
                "Resource": "*",
            },
            {
                "Sid": f"{role.role_name}CreatesGrants",
                "Effect": "Allow",
                "Principal": principal,
                "Action": "kms:CreateGrant",
                "Resource": "*",
                "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
            },
        ]
    if log_group is not None:
        arn = f"arn:aws:logs:{log_group.region}:{account_id}:log-group:{log_group.name}"
        statements.append(
            {
                "Sid": "LogGroupUsesKey",
                "Effect": "Allow",
                "Principal": {"Service": f"logs.{log_group.region}.amazonaws.com"},
                "Action": LOGS_KEY_ACTIONS,
                "Resource": "*",
                "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": arn}},
            }
        )
    if events:
        statements.append(
            {
                "Sid": "EventBridgePublishesToEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": EVENTS_KEY_ACTIONS,
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        )
    for service in publishers:
        statements.append(
            {
                "Sid": TOPIC_PUBLISHER_SIDS[service],
                "Effect": "Allow",
                "Principal": {"Service": service},
                "Action": TOPIC_PUBLISHER_KEY_ACTIONS,
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def service_linked_roles(
    name: str, roles: Sequence[ServiceRole], opts: pulumi.ResourceOptions
) -> list[aws.iam.ServiceLinkedRole]:
    """Create the roles a key policy names. They are account-wide and shared by every stack there, and
    AWS refuses to delete one in use, so a destroy leaves them (retain_on_delete)."""
    return [
        aws.iam.ServiceLinkedRole(
            f"{name}-slr-{role.short}",
            aws_service_name=role.service,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)),
        )
        for role in roles
    ]
