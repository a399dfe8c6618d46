"""The one KMS key-policy builder for gpufleet's keys (the cluster key and the image key), and the
service-linked roles those policies name.

KMS refuses a key policy whose principal does not exist, and CreateServiceLinkedRole refuses a role that
exists already ("has been taken in this account": terraform-provider-aws #28644), which the unsuffixed
Auto Scaling and EC2 Fleet roles do in most used accounts. So by default a cluster creates its own Auto
Scaling role with a custom suffix (which Auto Scaling documents: AWSServiceRoleForAutoScaling_<suffix>,
EC2 Auto Scaling user guide, autoscaling-service-linked-role) and names it; a role the key must admit
without knowing whether it exists (the EC2 Fleet role, which takes no suffix; every cluster's Auto Scaling
role on the image key) is admitted by an ARN condition instead of by name, which KMS does not resolve.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pulumi
import pulumi_aws as aws

from gpufleet.clouds.naming import fit


@dataclass(frozen=True)
class ServiceRole:
    """An AWS service-linked role that launches instances whose volumes the key encrypts."""

    service: str
    """The service principal it is linked to, e.g. autoscaling.amazonaws.com."""
    base_name: str
    """The role's name under /aws-service-role/<service>/ without a suffix."""
    short: str
    """A short name for resource names."""
    suffixable: bool = False
    """The service takes a custom suffix (CreateServiceLinkedRole CustomSuffix)."""
    suffix: str | None = None
    """This role's custom suffix; None for the service's default role."""
    sid: str = ""
    """The statements' Sid stem where base_name would repeat another role's; empty: base_name."""

    @property
    def role_name(self) -> str:
        return f"{self.base_name}_{self.suffix}" if self.suffix else self.base_name

    def arn(self, account_id: str) -> str:
        return f"arn:aws:iam::{account_id}:role/aws-service-role/{self.service}/{self.role_name}"

    def any_suffix_arn(self, account_id: str) -> str:
        """An ArnLike pattern for the default role and, where the service takes suffixes, every suffixed one."""
        return f"{self.arn(account_id)}*" if self.suffixable and not self.suffix else self.arn(account_id)

    def with_suffix(self, suffix: str) -> ServiceRole:
        assert self.suffixable, f"{self.service} takes no custom suffix"
        return replace(self, suffix=suffix)


AUTOSCALING = ServiceRole("autoscaling.amazonaws.com", "AWSServiceRoleForAutoScaling", "autoscaling", suffixable=True)
EC2_FLEET = ServiceRole("ec2fleet.amazonaws.com", "AWSServiceRoleForEC2Fleet", "ec2fleet")
# The account's default Auto Scaling role, which launches an EKS managed node group (the system group,
# eks_system.py) whatever role gpufleet's own groups use: admitted by its exact ARN (not suffixable here, so no
# other cluster's suffixed role matches), with Sids of its own beside a suffixed AUTOSCALING.
EKS_MANAGED_NODES = ServiceRole("autoscaling.amazonaws.com", "AWSServiceRoleForAutoScaling", "autoscaling",
                                sid="EksManagedNodeGroups")
# IAM role names hold at most 64 characters (IAM user guide, "IAM and AWS STS quotas"): what a suffix may add.
ROLE_NAME_MAX = 64

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
    also: tuple[str, ...] = ()
    """More log groups of the stack on the same key (the EKS control plane's), in the same Region."""

    def arns(self, account_id: str) -> str | list[str]:
        """The groups' ARNs as the policy condition names them: one as text (as before), several as a list."""
        arns = [f"arn:aws:logs:{self.region}:{account_id}:log-group:{name}" for name in (self.name, *self.also)]
        return arns[0] if len(arns) == 1 else arns


def _role_statements(role: ServiceRole, principal: dict[str, str], condition: dict[str, dict]) -> list[dict]:
    return [
        {
            "Sid": f"{role.sid or role.base_name}UsesKey",
            "Effect": "Allow",
            "Principal": principal,
            "Action": SERVICE_ROLE_KEY_ACTIONS,
            "Resource": "*",
            **({"Condition": condition} if condition else {}),
        },
        {
            "Sid": f"{role.sid or role.base_name}CreatesGrants",
            "Effect": "Allow",
            "Principal": principal,
            "Action": "kms:CreateGrant",
            "Resource": "*",
            "Condition": {**condition, "Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
    ]


def _service_statements(
    account_id: str, log_group: LogGroupGrant | None, events: bool, publishers: Sequence[str]
) -> list[dict[str, object]]:
    """The services that use the key: CloudWatch Logs for the log group, EventBridge, the alarm topic's
    publishers."""
    statements: list[dict[str, object]] = []
    if log_group is not None:
        arn = log_group.arns(account_id)
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
        # The statement AWS documents for an EventBridge rule's target topic under a customer key, with no
        # condition (AWS re:Post knowledge center, sns-not-getting-eventbridge-notification: events.amazonaws.com,
        # kms:Decrypt and kms:GenerateDataKey); an aws:SourceAccount condition here is one EventBridge's delivery
        # may not meet (not confirmed on a real account). The topic policy scopes publishing to the
        # stack's own rule (interruptions.py, aws:SourceArn).
        statements.append(
            {
                "Sid": "EventBridgePublishesToEncryptedTopic",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": EVENTS_KEY_ACTIONS,
                "Resource": "*",
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
    return statements


def key_policy(
    account_id: str,
    roles: Sequence[ServiceRole],
    *,
    log_group: LogGroupGrant | None,
    role_patterns: Sequence[ServiceRole],
    events: bool = False,
    publishers: Sequence[str] = (),
) -> str:
    """The key policy: IAM administers the key; each role, the log group and EventBridge may use it;
    publishers (service principals of TOPIC_PUBLISHER_SIDS) publish to a topic under it. role_patterns:
    roles admitted by ARN (any_suffix_arn) under this account, whether or not they exist yet."""
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
        statements += _role_statements(role, {"AWS": role.arn(account_id)}, {})
    for role in role_patterns:
        # KMS resolves a named principal when the policy is set, and refuses one that does not exist; a
        # condition on aws:PrincipalArn (the role's ARN for a role: IAM user guide, global condition keys)
        # within kms:CallerAccount admits the role whenever it comes to exist. Only the service assumes it.
        statements += _role_statements(role, {"AWS": "*"}, {
            "StringEquals": {"kms:CallerAccount": account_id},
            "ArnLike": {"aws:PrincipalArn": role.any_suffix_arn(account_id)},
        })
    statements += _service_statements(account_id, log_group, events, publishers)
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def service_linked_roles(
    name: str, roles: Sequence[ServiceRole], opts: pulumi.ResourceOptions
) -> list[aws.iam.ServiceLinkedRole]:
    """Create the roles a key policy names. An unsuffixed one is account-wide and shared by every stack there,
    and AWS refuses to delete one in use, so a destroy leaves it (retain_on_delete); a suffixed one is this
    stack's own and goes with it (after its groups, which depend on it), so a stack made again can create it."""
    return [
        aws.iam.ServiceLinkedRole(
            f"{name}-slr-{role.short}",
            aws_service_name=role.service,
            custom_suffix=role.suffix,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=role.suffix is None)),
        )
        for role in roles
    ]


@dataclass(frozen=True)
class ClusterRoles:
    """The service-linked roles a cluster key admits, and which of them the stack creates."""

    named: tuple[ServiceRole, ...]
    """Roles the key policy names (they must exist when the key is made)."""
    create: bool
    """The stack creates the named roles before the key."""
    patterns: tuple[ServiceRole, ...]
    """Roles admitted by ARN condition, existing or not."""


def role_suffix(cluster: str, environment: str, region: str) -> str:
    """The custom suffix of a cluster's own Auto Scaling role. Role names are unique in the whole account, so the
    suffix carries the hash of the region (one cluster name in two regions gets two roles) and is cut so the role
    name fits IAM's 64 characters (clouds/aws/names.py)."""
    room = ROLE_NAME_MAX - len(AUTOSCALING.base_name) - 1
    return fit(f"{cluster}-{environment}", room, region)


def cluster_roles(mode: str, suffix: str, fleet: bool) -> ClusterRoles:
    """per-cluster: the cluster's own suffixed Auto Scaling role, created; the EC2 Fleet role (no suffix) by
    pattern. create / exists: the unsuffixed roles, created or already there."""
    if mode == "per-cluster":
        return ClusterRoles((AUTOSCALING.with_suffix(suffix),), True, (EC2_FLEET,) if fleet else ())
    return ClusterRoles((AUTOSCALING, EC2_FLEET) if fleet else (AUTOSCALING,), mode == "create", ())


def managed_node_roles(scheduler: str, named: Sequence[ServiceRole]) -> tuple[ServiceRole, ...]:
    """The default Auto Scaling role an EKS cluster's managed system group launches under, where the key does not
    name it already (a per-cluster suffixed role is the stack's own groups')."""
    if scheduler != "kubernetes" or any(role == AUTOSCALING for role in named):
        return ()
    return (EKS_MANAGED_NODES,)
