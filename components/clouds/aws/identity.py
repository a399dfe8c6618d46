"""Least-privilege node identity: an instance role and profile with only what a GPU node uses.

SSM core (the AWS managed policy) for management without SSH; CloudWatch agent logs to the cluster's
own log group and metrics in the gpufleet namespace; read of the S3 prefixes the stack names;
complete-lifecycle-action (and, with GPU metrics, set-instance-health) on the cluster's own groups. No wildcard
actions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

SSM_CORE_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
METRICS_NAMESPACE = "gpufleet"


@dataclass(frozen=True)
class NodeIdentityArgs:
    """Inputs of AwsNodeIdentity."""

    account_id: pulumi.Input[str]
    """Account of the cluster, for ARNs."""
    region: str
    """Region of the cluster, for ARNs."""
    log_group_arn: pulumi.Input[str]
    """The cluster's log group; the agent writes only there."""
    group_names: list[str]
    """Auto Scaling group names whose lifecycle actions nodes complete."""
    s3_read_prefixes: list[str] = field(default_factory=list)
    """s3://bucket/prefix locations nodes may read."""
    permissions_boundary: str | None = None
    """ARN of a permissions boundary for the role."""
    mark_unhealthy: bool = False
    """Nodes may mark themselves unhealthy in their own groups (the DCGM error watch, gpufleet-gpu-health)."""
    agent_tags: bool = False
    """The CloudWatch agent runs and resolves ${aws:AutoScalingGroupName} from the instance's tags."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for every resource."""


def _s3_statements(prefixes: list[str]) -> list[dict]:
    statements = []
    for index, uri in enumerate(prefixes):
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        prefix = prefix.rstrip("/")
        objects = f"arn:aws:s3:::{bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{bucket}/*"
        statements.append(
            {"Sid": f"ReadObjects{index}", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": objects}
        )
        listing: dict = {"Sid": f"ListPrefix{index}", "Effect": "Allow", "Action": ["s3:ListBucket"],
                         "Resource": f"arn:aws:s3:::{bucket}"}
        if prefix:
            listing["Condition"] = {"StringLike": {"s3:prefix": [f"{prefix}/*", prefix]}}
        statements.append(listing)
    return statements


def node_policy_document(
    account_id: str, region: str, log_group_arn: str, group_names: list[str], s3_read_prefixes: list[str],
    mark_unhealthy: bool = False, agent_tags: bool = False,
) -> str:
    statements = [
        {
            "Sid": "WriteOwnLogGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            "Resource": [log_group_arn, f"{log_group_arn}:log-stream:*"],
        },
        {
            # cloudwatch:PutMetricData has no resource-level permissions (Service Authorization
            # Reference, Amazon CloudWatch): Resource "*", narrowed by the namespace condition.
            "Sid": "PutOwnMetrics",
            "Effect": "Allow",
            "Action": ["cloudwatch:PutMetricData"],
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
        },
        *_s3_statements(s3_read_prefixes),
    ]
    groups = [
        f"arn:aws:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/{group}"
        for group in group_names
    ]
    if groups:
        statements.append(
            {
                "Sid": "CompleteOwnLifecycleActions",
                "Effect": "Allow",
                "Action": ["autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"],
                "Resource": groups,
            }
        )
    if groups and mark_unhealthy:
        statements.append(
            {"Sid": "MarkOwnInstancesUnhealthy", "Effect": "Allow", "Action": ["autoscaling:SetInstanceHealth"],
             "Resource": groups}
        )
    if agent_tags:
        # The agent's ec2tagger resolves ${aws:AutoScalingGroupName} with ec2:DescribeTags and holds every data
        # point until that call succeeds (aws/amazon-cloudwatch-agent plugins/processors/ec2tagger/ec2tagger.go,
        # initial retrieval; CloudWatchAgentServerPolicy grants it). DescribeTags has no resource-level
        # permissions (Service Authorization Reference, Amazon EC2): Resource "*". Only what the agent calls:
        # no DescribeVolumes, as the config asks for no EBS device dimension.
        statements.append(
            {"Sid": "AgentReadsInstanceTags", "Effect": "Allow", "Action": ["ec2:DescribeTags"], "Resource": "*"}
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


class AwsNodeIdentity(pulumi.ComponentResource):
    role_arn: pulumi.Output[str]
    instance_profile_arn: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:NodeIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        assume = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                           "Action": "sts:AssumeRole"}],
        }
        role = aws.iam.Role(
            f"{name}-role",
            description=f"gpufleet {name}: GPU node",
            assume_role_policy=json.dumps(assume),
            permissions_boundary=args.permissions_boundary,
            tags=args.tags,
            opts=child,
        )
        aws.iam.RolePolicyAttachment(f"{name}-ssm", role=role.name, policy_arn=SSM_CORE_POLICY, opts=child)
        aws.iam.RolePolicy(
            f"{name}-node",
            role=role.id,
            policy=pulumi.Output.all(args.account_id, args.log_group_arn).apply(
                lambda values: node_policy_document(
                    values[0], args.region, values[1], args.group_names, args.s3_read_prefixes, args.mark_unhealthy,
                    args.agent_tags,
                )
            ),
            opts=child,
        )
        profile = aws.iam.InstanceProfile(f"{name}-profile", role=role.name, tags=args.tags, opts=child)
        self.role_arn = role.arn
        self.instance_profile_arn = profile.arn
        self.register_outputs({"role_arn": self.role_arn, "instance_profile_arn": self.instance_profile_arn})
