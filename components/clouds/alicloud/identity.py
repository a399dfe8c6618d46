"""Least-privilege node identity: a RAM role trusted by ecs.aliyuncs.com with one custom policy.

Read of the OSS prefixes the stack names; with GPU metrics, custom metrics to CloudMonitor and marking its own
scaling groups' instances unhealthy; with Slurm, reading the munge key's parameter
(slurm_identity.py). Lifecycle hooks are completed by the scale-out gate's role, never the node's.
No wildcard actions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.alicloud.names import NAMES, POLICY, ROLE
from gpufleet.clouds.naming import fit

ECS_SERVICE = "ecs.aliyuncs.com"


@dataclass(frozen=True)
class NodeIdentityArgs:
    account_id: pulumi.Input[str]
    region: str
    tags: dict[str, str]
    base: str
    """The cluster in its environment (naming.stack_base): RAM names are account-wide."""
    oss_read_prefixes: list[str] = field(default_factory=list)
    gpu_metrics: bool = False
    """Publish gpufleet-gpu-health's custom metrics and mark a broken node unhealthy in its own group."""
    munge_parameter: str | None = None
    """scheduler slurm: the munge key's OOS secret parameter the node reads at boot (slurm_head.py)."""
    munge_key_id: pulumi.Input[str] | None = None
    """The stack key that parameter is encrypted with."""


def service_trust_document(service: str) -> str:
    """A RAM role trust policy that lets one Alibaba Cloud service (e.g. ecs.aliyuncs.com) assume the role."""
    trust = {"Version": "1", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                            "Principal": {"Service": [service]}}]}
    return json.dumps(trust)


def scaling_group_arn(region: str, account_id: str, group_id: str) -> str:
    """An ESS scaling group as RAM resource-level authorisation names it."""
    return f"acs:ess:{region}:{account_id}:scalinggroup/{group_id}"


def secret_parameter_arn(region: str, account_id: str, name: str) -> str:
    """An OOS secret parameter as RAM names it."""
    return f"acs:oos:{region}:{account_id}:secretparameter/{name}"


def key_arn(region: str, account_id: str, key: str) -> str:
    """A KMS key as RAM names it; a brought key given as its ARN stays as it is."""
    return key if key.startswith("acs:kms:") else f"acs:kms:{region}:{account_id}:key/{key}"


MUNGE_READ_ACTIONS = ["oos:GetSecretParameter"]
KEY_READ_ACTIONS = ["kms:Decrypt"]


def munge_read_statements(region: str, account_id: str, parameter: str, key: str) -> list[dict]:
    """A node's read of the munge key: the parameter and the key's decrypt."""
    return [
        {"Effect": "Allow", "Action": MUNGE_READ_ACTIONS,
         "Resource": [secret_parameter_arn(region, account_id, parameter)]},
        {"Effect": "Allow", "Action": KEY_READ_ACTIONS, "Resource": [key_arn(region, account_id, key)]},
    ]


def _oss_statements(prefixes: list[str]) -> list[dict]:
    statements = []
    for uri in prefixes:
        bucket, _, prefix = uri.removeprefix("oss://").partition("/")
        prefix = prefix.rstrip("/")
        objects = f"acs:oss:*:*:{bucket}/{prefix}/*" if prefix else f"acs:oss:*:*:{bucket}/*"
        statements.append({"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [objects]})
        listing: dict = {"Effect": "Allow", "Action": ["oss:ListObjects"], "Resource": [f"acs:oss:*:*:{bucket}"]}
        if prefix:
            listing["Condition"] = {"StringLike": {"oss:Prefix": [f"{prefix}/*", prefix]}}
        statements.append(listing)
    return statements


def node_policy_document(
    account_id: str, region: str, group_ids: list[str], oss_read_prefixes: list[str], gpu_metrics: bool = False,
    munge: tuple[str, str] | None = None,
) -> str:
    """munge: (parameter, key) the node reads the Slurm munge key from."""
    statements = _oss_statements(oss_read_prefixes)
    if munge is not None:
        statements += munge_read_statements(region, account_id, *munge)
    if gpu_metrics:
        # cms:PutCustomMetric has no resource-level permission and no condition key (CloudMonitor API reference,
        # PutCustomMetric: All Resources): Resource "*" (the action is not a wildcard).
        statements.insert(0, {"Effect": "Allow", "Action": ["cms:PutCustomMetric"], "Resource": ["*"]})
    # The node never completes a lifecycle hook (the scale-out gate's runbook does, as its own role): only a node
    # with GPU metrics acts on its group, marking itself unhealthy.
    if group_ids and gpu_metrics:
        statements.append({
            "Effect": "Allow",
            "Action": ["ess:SetInstanceHealth"],
            "Resource": [scaling_group_arn(region, account_id, group) for group in group_ids],
        })
    return json.dumps({"Version": "1", "Statement": statements}, sort_keys=True)


class AlicloudNodeIdentity(pulumi.ComponentResource):
    """The role; `attach` adds the policy once the scaling groups it names exist."""

    role_name: pulumi.Output[str]
    role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:NodeIdentity", name, None, opts)
        self._name, self._args = name, args
        role = alicloud.ram.Role(
            f"{name}-role",
            # RAM names are account-wide: the environment in the base and the region's hash keep stacks apart.
            role_name=fit(f"{args.base}-node", NAMES.limit(ROLE, "roleName"), args.region),
            description=f"gpufleet {name}: GPU node",
            assume_role_policy_document=service_trust_document(ECS_SERVICE),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.role_name = role.role_name
        self.role_arn = role.arn
        self.register_outputs({"role_name": self.role_name, "role_arn": self.role_arn})

    def attach(self, group_ids: list[pulumi.Output[str]]) -> alicloud.ram.RolePolicyAttachment | None:
        """The node's policy, once the scaling groups it names exist; None when the node needs no grant at all
        (no OSS prefixes, no GPU metrics, no munge key): RAM takes no policy without statements."""
        args = self._args
        if not args.oss_read_prefixes and not args.gpu_metrics and args.munge_parameter is None:
            return None
        child = pulumi.ResourceOptions(parent=self)
        policy = alicloud.ram.Policy(
            f"{self._name}-node",
            policy_name=fit(f"{args.base}-node", NAMES.limit(POLICY, "policyName"), args.region),
            description="gpufleet node: OSS read, CloudMonitor metrics, its own scaling groups' health",
            policy_document=pulumi.Output.all(args.account_id, args.munge_key_id, *group_ids).apply(
                lambda values: node_policy_document(
                    values[0], args.region, list(values[2:]), args.oss_read_prefixes, args.gpu_metrics,
                    (args.munge_parameter, values[1]) if args.munge_parameter is not None else None,
                )
            ),
            opts=child,
        )
        return alicloud.ram.RolePolicyAttachment(
            f"{self._name}-node", role_name=self.role_name, policy_name=policy.policy_name, policy_type="Custom",
            opts=child,
        )
