"""The Slurm head node's RAM role and the nodes' share of the munge key, least privilege.

The munge key is an OOS secret parameter encrypted with the stack's KMS key (slurm_head.py munge_parameter). RAM
names it acs:oos:{region}:{account}:secretparameter/{name} (OOS API reference, GetSecretParameter and
UpdateSecretParameter, "Authorization information": resource type secretparameter), so each grant is on that one
parameter. OOS decrypts and encrypts the value with the parameter's KeyId on the caller's behalf; its API reference
says the caller needs KMS's permissions too (GetSecretParameter: "ensure that you have the permissions to call the
GetSecretValue API operation of KMS"; UpdateSecretParameter: UpdateSecretValue), without naming the KMS resource.
The grants here are on the stack key only (acs:kms:{region}:{account}:key/{key id}, the form keys.py reads):
kms:Decrypt to read, kms:Encrypt and kms:GenerateDataKey to write (KEY_USE_UNCONFIRMED says so in the plan).

The head node: its munge key (get and update), the key's use, and the power programs' ESS calls
(components/clouds/alicloud/slurm_capacity.py): DescribeScalingGroups by name (a query over the region's groups:
Resource "*"; whether RAM takes a scaling group there is not read), ModifyScalingGroup and RemoveInstances on the
cluster's own scaling groups (Auto Scaling's RAM reference, api-ess-2022-02-22-ram: resource type ScalingGroup,
acs:ess:{#regionId}:{#accountId}:scalinggroup/{#ScalingGroupId}; identity.scaling_group_arn). The nodes: get the
munge key, decrypt.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.alicloud.names import NAMES, POLICY, ROLE
from gpufleet.clouds.naming import fit

from .identity import ECS_SERVICE, key_arn, scaling_group_arn, secret_parameter_arn, service_trust_document

HEAD_MUNGE_ACTIONS = ["oos:GetSecretParameter", "oos:UpdateSecretParameter"]
KEY_WRITE_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"]
GROUP_READ_ACTIONS = ["ess:DescribeScalingGroups"]
GROUP_SCALE_ACTIONS = ["ess:ModifyScalingGroup", "ess:RemoveInstances"]
KEY_USE_UNCONFIRMED = (
    "unconfirmed: OOS's API reference says a secret parameter's reader and writer need KMS permissions too "
    "(GetSecretValue, UpdateSecretValue) without naming the KMS resource; the head node and nodes hold only "
    "kms:Decrypt (and the head kms:Encrypt, kms:GenerateDataKey) on the stack key, which is not confirmed on an "
    "account to be what OOS checks")


def head_policy_document(region: str, account_id: str, parameter: str, key: str, group_ids: list[str]) -> str:
    """The head node role's policy."""
    statements = [
        {"Effect": "Allow", "Action": HEAD_MUNGE_ACTIONS,
         "Resource": [secret_parameter_arn(region, account_id, parameter)]},
        {"Effect": "Allow", "Action": KEY_WRITE_ACTIONS, "Resource": [key_arn(region, account_id, key)]},
        {"Effect": "Allow", "Action": GROUP_READ_ACTIONS, "Resource": ["*"]},
    ]
    if group_ids:
        statements.append({"Effect": "Allow", "Action": GROUP_SCALE_ACTIONS,
                           "Resource": [scaling_group_arn(region, account_id, group) for group in group_ids]})
    return json.dumps({"Version": "1", "Statement": statements}, sort_keys=True)


def head_role(name: str, base: str, region: str, tags: dict[str, str], opts: pulumi.ResourceOptions
              ) -> alicloud.ram.Role:
    """The head node's RAM role, trusted by ECS (the instance's role; its policy follows the scaling groups)."""
    return alicloud.ram.Role(
        f"{name}-role",
        # RAM names are account-wide: the environment in the base and the region's hash keep stacks apart.
        role_name=fit(f"{base}-slurm-head", NAMES.limit(ROLE, "roleName"), region),
        description=f"gpufleet {name}: Slurm head node",
        assume_role_policy_document=service_trust_document(ECS_SERVICE),
        tags=tags,
        opts=opts,
    )


def grant_head(name: str, base: str, region: str, role: alicloud.ram.Role, account_id: pulumi.Input[str],
               parameter: str, key_id: pulumi.Input[str], group_ids: list[pulumi.Output[str]],
               opts: pulumi.ResourceOptions) -> alicloud.ram.RolePolicyAttachment:
    """The head role's policy, once the scaling groups it names exist."""
    policy = alicloud.ram.Policy(
        f"{name}-policy",
        policy_name=fit(f"{base}-slurm-head", NAMES.limit(POLICY, "policyName"), region),
        description="gpufleet Slurm head node: its munge key and the cluster's scaling groups",
        policy_document=pulumi.Output.all(account_id, key_id, *group_ids).apply(
            lambda v: head_policy_document(region, v[0], parameter, v[1], list(v[2:]))),
        opts=opts,
    )
    return alicloud.ram.RolePolicyAttachment(f"{name}-policy", role_name=role.role_name,
                                             policy_name=policy.policy_name, policy_type="Custom", opts=opts)
