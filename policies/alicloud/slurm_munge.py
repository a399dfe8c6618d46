"""A Slurm cluster's munge key lives in an OOS secret parameter encrypted with the stack's customer key only, stored
there by the head node.

Every Slurm daemon and client authenticates with the cluster's munge key; whoever reads it can act as any user of
the cluster. The head node generates it at first boot and stores it with UpdateSecretParameter
(scripts/slurm-alicloud.sh), so it is never in Pulumi state: a KMS Secret resource keeps its secret_data in state
(the provider's read calls GetSecretValue, resource_alicloud_kms_secret.go lines 265-270), a plain OOS parameter
keeps its value in state and unencrypted, and a key written by user data sits in the instance, launch template or
scaling configuration, readable by whoever may describe them (DescribeUserData).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.stackfile.keys import provider_managed

from ..cloud_init import munge_key_files
from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, get
from .resource_types import (
    INSTANCE,
    KMS_SECRET,
    LAUNCH_TEMPLATE,
    OOS_PARAMETER,
    OOS_SECRET_PARAMETER,
    SCALING_CONFIGURATION,
)
from .slurm_head import files_of, head_nodes

MUNGE = "munge"
FIX = ("the head node generates the key at first boot and stores it in the OOS secret parameter "
       "(UpdateSecretParameter); nodes read it with GetSecretParameter")
NAME_KEYS = {KMS_SECRET: "secretName", OOS_PARAMETER: "parameterName", OOS_SECRET_PARAMETER: "secretParameterName"}


def _names(node: Node) -> list[str]:
    """The resource's logical name and the cloud name it asks for."""
    value = get(node.props, NAME_KEYS.get(node.type, "name"))
    return [node.name, *([value] if isinstance(value, str) else [])]


def _munge(node: Node) -> bool:
    return any(MUNGE in name.lower() for name in _names(node))


def _key_problems(parameter: Node) -> Iterator[str]:
    key = get(parameter.props, "keyId")
    if key is UNKNOWN:
        return
    if not key:
        yield ("the munge key's secret parameter is encrypted with OOS's default key: set key_id to the stack's "
               "customer KMS key (storage.kms_key)")
    elif provider_managed("alicloud", key):
        yield (f"the munge key's secret parameter uses the service key {key}: set key_id to the stack's customer "
               "KMS key (storage.kms_key)")


def check_munge_key(stack: Stack, config: Config) -> Iterator[Finding]:
    parameters = [node for node in stack.of_type(OOS_SECRET_PARAMETER) if _munge(node)]
    heads = head_nodes(stack)
    if heads and not parameters:
        yield heads[0].urn, ("the Slurm cluster keeps its munge key in no secret parameter: create an "
                             "oos.SecretParameter 'gpufleet-<cluster>-<environment>-slurm-munge-key' with key_id the "
                             f"stack's customer key; {FIX}")
    for parameter in parameters:
        yield from ((parameter.urn, problem) for problem in _key_problems(parameter))
    for secret in (node for node in stack.of_type(KMS_SECRET) if _munge(node)):
        yield secret.urn, f"a KMS Secret holds the munge key, so its value sits in Pulumi state: remove it; {FIX}"
    for plain in (node for node in stack.of_type(OOS_PARAMETER) if _munge(node)):
        yield plain.urn, ("a plain OOS parameter holds the munge key, unencrypted and in Pulumi state: remove it; "
                          f"{FIX}")
    for node in stack.of_type(INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION):
        written = munge_key_files(files_of(node))  # none while the user data is unknown
        if written:
            yield node.urn, (f"the user data writes the munge key ({', '.join(written)}), readable by whoever may "
                             f"describe the {node.type.rsplit(':', 1)[-1]}: remove it; {FIX}")


RULES: list[Rule] = [
    stack_rule(
        "alicloud-slurm-munge-key-in-secret-store",
        "A Slurm cluster's munge key lives only in an OOS secret parameter encrypted with a customer KMS key: no "
        "KMS Secret, plain OOS parameter or user data carries it.",
        MANDATORY,
        "alicloud",
        [INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION, OOS_SECRET_PARAMETER, KMS_SECRET, OOS_PARAMETER],
        check_munge_key,
    ),
]
