"""The Slurm head node's role and the nodes' share of the munge key, least privilege.

The head node: the munge key's secret (DescribeSecret to see whether a key is stored, GetSecretValue, PutSecretValue
at its first boot; scripts/slurm-aws.sh), the stack key through Secrets Manager only, the resume and suspend programs'
Auto Scaling calls on the cluster's own groups (components/clouds/aws/slurm_capacity.py), and SSM core (reached by
Session Manager). The nodes: GetSecretValue on that secret and kms:Decrypt through Secrets Manager.

Secrets Manager encrypts each new secret value under a data key it asks KMS for, and decrypts that data key to read
it (Secrets Manager user guide, security-encryption, "Secret encryption and decryption"): GenerateDataKey to put,
Decrypt to get. kms:Encrypt is needed only to re-encrypt versions when a secret's key changes (UpdateSecret KmsKeyId),
which nothing here does. kms:ViaService keeps the key usable through Secrets Manager of the region only (KMS developer
guide, kms:ViaService).
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from .identity import SSM_CORE_POLICY, group_arns, key_through_secrets_manager

ASSUME_BY_EC2 = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
HEAD_SECRET_ACTIONS = ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue",
                       "secretsmanager:PutSecretValue"]


def head_policy_document(region: str, account_id: str, secret_arn: str, key_arn: str,
                         group_names: list[str]) -> str:
    """The head node role's inline policy."""
    statements = [
        {"Sid": "MungeKeySecret", "Effect": "Allow", "Action": HEAD_SECRET_ACTIONS, "Resource": secret_arn},
        key_through_secrets_manager("MungeKeyEncryption", region, key_arn, ["kms:Decrypt", "kms:GenerateDataKey"]),
        # DescribeAutoScalingGroups has no resource-level permissions (Service Authorization Reference, Amazon EC2
        # Auto Scaling, "Actions defined by": no resource type for it): Resource "*".
        {"Sid": "ReadGroups", "Effect": "Allow", "Action": ["autoscaling:DescribeAutoScalingGroups"], "Resource": "*"},
    ]
    groups = group_arns(region, account_id, group_names)
    if groups:
        statements.append({"Sid": "ScaleOwnGroups", "Effect": "Allow",
                           "Action": ["autoscaling:SetDesiredCapacity",
                                      "autoscaling:TerminateInstanceInAutoScalingGroup"],
                           "Resource": groups})
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def head_identity(name: str, region: str, account_id: pulumi.Input[str], secret_arn: pulumi.Input[str],
                  key_arn: pulumi.Input[str], group_names: list[str], permissions_boundary: str | None,
                  tags: dict[str, str], opts: pulumi.ResourceOptions) -> aws.iam.InstanceProfile:
    """The head node's role (SSM core and the inline policy) and its instance profile."""
    role = aws.iam.Role(f"{name}-role", description=f"gpufleet {name}: Slurm head node",
                        assume_role_policy=json.dumps(ASSUME_BY_EC2), permissions_boundary=permissions_boundary,
                        tags=tags, opts=opts)
    aws.iam.RolePolicyAttachment(f"{name}-ssm", role=role.name, policy_arn=SSM_CORE_POLICY, opts=opts)
    aws.iam.RolePolicy(
        f"{name}-head", role=role.id,
        policy=pulumi.Output.all(account_id, secret_arn, key_arn).apply(
            lambda v: head_policy_document(region, v[0], v[1], v[2], group_names)),
        opts=opts)
    return aws.iam.InstanceProfile(f"{name}-profile", role=role.name, tags=tags, opts=opts)
