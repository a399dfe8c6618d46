"""VPC flow logs of a created VPC (CIS AWS Foundations "VPC flow logging is enabled in all VPCs"; Checkov
CKV2_AWS_11): all traffic to the cluster's own log group, which the stack key encrypts, through a delivery role
only the flow logs service of this account can assume.

The key needs nothing new: CloudWatch Logs encrypts the events it receives itself, under the key policy's
LogGroupUsesKey statement (key_policy.py), whoever puts them; the delivery role only calls the Logs API.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

FLOW_LOGS_SERVICE = "vpc-flow-logs.amazonaws.com"
# Amazon VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs" (flow-logs-iam-role): the role's
# policy must include at least these actions. AWS's example grants them on "*"; here they are scoped to the
# cluster's log group and its streams.
DELIVERY_ACTIONS = [
    "logs:CreateLogGroup",
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "logs:DescribeLogGroups",
    "logs:DescribeLogStreams",
]


def delivery_trust_policy(account_id: str, region: str) -> str:
    """Only the flow logs service, acting for a flow log of this account and region, assumes the role: the
    aws:SourceAccount / aws:SourceArn conditions the same user guide page recommends against the confused
    deputy (the flow log id is not known before the flow log exists, so its part of the ARN is a wildcard)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": FLOW_LOGS_SERVICE},
                    "Action": "sts:AssumeRole",
                    "Condition": {
                        "StringEquals": {"aws:SourceAccount": account_id},
                        "ArnLike": {"aws:SourceArn": f"arn:aws:ec2:{region}:{account_id}:vpc-flow-log/*"},
                    },
                }
            ],
        },
        sort_keys=True,
    )


def delivery_policy(log_group_arn: str) -> str:
    """Write to the one log group: the group itself and its streams (`:*`). DescribeLogGroups lists the account's
    groups and takes no resource-level scope (Service Authorization Reference, CloudWatch Logs: resource "*"), so it
    stands alone on "*"."""
    listing = "logs:DescribeLogGroups"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "PublishFlowLogsToTheClusterLogGroup",
                    "Effect": "Allow",
                    "Action": [action for action in DELIVERY_ACTIONS if action != listing],
                    "Resource": [log_group_arn, f"{log_group_arn}:*"],
                },
                {"Sid": "FindTheLogGroup", "Effect": "Allow", "Action": [listing], "Resource": "*"},
            ],
        },
        sort_keys=True,
    )


def vpc_flow_log(
    name: str,
    vpc_id: pulumi.Input[str],
    log_group: aws.cloudwatch.LogGroup,
    account_id: pulumi.Output[str],
    region: str,
    permissions_boundary: str | None,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.ec2.FlowLog:
    """The delivery role, its policy and the flow log of every packet decision (ACCEPT and REJECT) in the VPC."""
    # The group's ARN from its known name (as the key policy forms it), so the policy is a plain document.
    group_arn = pulumi.Output.all(account_id, log_group.name).apply(
        lambda v: f"arn:aws:logs:{region}:{v[0]}:log-group:{v[1]}"
    )
    role = aws.iam.Role(
        f"{name}-flow-logs",
        assume_role_policy=account_id.apply(lambda account: delivery_trust_policy(account, region)),
        description=f"VPC flow logs of gpufleet {name} into its log group",
        permissions_boundary=permissions_boundary,
        tags=tags,
        opts=opts,
    )
    policy = aws.iam.RolePolicy(
        f"{name}-flow-logs", role=role.id, policy=group_arn.apply(delivery_policy), opts=opts
    )
    return aws.ec2.FlowLog(
        f"{name}-flow-logs",
        vpc_id=vpc_id,
        traffic_type="ALL",
        log_destination_type="cloud-watch-logs",
        log_destination=log_group.arn,
        iam_role_arn=role.arn,
        tags=tags,
        # The first delivery is checked against the role's permissions: the policy exists before the flow log.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[policy])),
    )
