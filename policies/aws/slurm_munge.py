"""A Slurm cluster's munge key lives in Secrets Manager only, encrypted with a customer-managed key.

Every Slurm daemon and client authenticates with the cluster's munge key; whoever reads it can act as any user of
the cluster. The head node generates it at first boot and puts it into the secret (PutSecretValue), so it is never
in Pulumi state: a SecretVersion resource keeps its value in state (pulumi_aws secretsmanager.SecretVersion
secret_string / secret_binary), and a key written by user data sits in the launch template or instance, readable by
anyone who may describe them (ec2:DescribeLaunchTemplateVersions, DescribeInstanceAttribute userData).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.stackfile.keys import provider_managed

from ..cloud_init import munge_key_files
from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, get
from .resource_types import INSTANCE, LAUNCH_TEMPLATE, SECRET, SECRET_VERSION, SSM_PARAMETER
from .slurm_head import files_of, head_nodes

MUNGE = "munge"
FIX_VERSION = ("the head node generates the key at first boot and puts it into the secret (PutSecretValue); nodes "
               "read it with GetSecretValue")


def _names(node: Node) -> list[str]:
    """The resource's logical name and the cloud names it asks for."""
    return [node.name, *(value for key in ("name", "namePrefix") if isinstance(value := get(node.props, key), str))]


def _munge_secrets(stack: Stack) -> list[Node]:
    return [node for node in stack.of_type(SECRET) if any(MUNGE in name.lower() for name in _names(node))]


def _on_secret(version: Node, secrets: list[Node]) -> Node | None:
    """The munge secret a SecretVersion writes, by the dependency its secret_id records or the name or ARN it
    gives."""
    target = get(version.props, "secretId")
    for secret in secrets:
        if secret.urn in version.property_dependencies.get("secretId", frozenset()):
            return secret
        if isinstance(target, str) and target in _names(secret)[1:]:
            return secret
    return None


def _key_problems(secret: Node) -> Iterator[str]:
    key = get(secret.props, "kmsKeyId")
    if key is UNKNOWN:
        return
    if not key:
        yield ("the munge key's secret is encrypted with the AWS-managed key aws/secretsmanager: set kms_key_id to "
               "the stack's customer-managed KMS key (storage.kms_key)")
    elif provider_managed("aws", key):
        yield (f"the munge key's secret uses the AWS-managed key {key}: set kms_key_id to the stack's "
               "customer-managed KMS key (storage.kms_key)")


def check_munge_key(stack: Stack, config: Config) -> Iterator[Finding]:
    secrets = _munge_secrets(stack)
    heads = head_nodes(stack)
    if heads and not secrets:
        yield heads[0].urn, ("the Slurm cluster keeps its munge key in no secret: create an "
                             "aws.secretsmanager.Secret '<cluster>-<environment>-munge-key' with kms_key_id the "
                             f"stack's customer-managed key and no SecretVersion; {FIX_VERSION}")
    for secret in secrets:
        yield from ((secret.urn, problem) for problem in _key_problems(secret))
    for version in stack.of_type(SECRET_VERSION):
        secret = _on_secret(version, secrets)
        if secret is not None or MUNGE in version.name.lower():
            yield version.urn, ("a SecretVersion holds the munge key, so its value sits in Pulumi state: remove the "
                                f"SecretVersion; {FIX_VERSION}")
    for parameter in stack.of_type(SSM_PARAMETER):
        if any(MUNGE in name.lower() for name in _names(parameter)):
            yield parameter.urn, ("an SSM parameter holds the munge key, outside the secret store and in Pulumi "
                                  f"state: remove it; {FIX_VERSION}")
    for node in stack.of_type(LAUNCH_TEMPLATE, INSTANCE):
        written = munge_key_files(files_of(node))  # none while the user data is unknown
        if written:
            yield node.urn, (f"the user data writes the munge key ({', '.join(written)}), readable by whoever may "
                             f"describe the {'instance' if node.type == INSTANCE else 'launch template'}: remove "
                             f"it; {FIX_VERSION}")


RULES: list[Rule] = [
    stack_rule(
        "aws-slurm-munge-key-in-secret-store",
        "A Slurm cluster's munge key lives only in a Secrets Manager secret encrypted with a customer-managed KMS "
        "key: no SecretVersion, SSM parameter or user data carries it.",
        MANDATORY,
        "aws",
        [INSTANCE, LAUNCH_TEMPLATE, SECRET, SECRET_VERSION, SSM_PARAMETER],
        check_munge_key,
    ),
]
