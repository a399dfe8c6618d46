"""A Slurm cluster's munge key lives in the stack's Key Vault only, set there by the head node.

Every Slurm daemon and client authenticates with the cluster's munge key; whoever reads it can act as any user of
the cluster. The head node generates it at first boot and sets it with Key Vault's Set Secret (scripts/slurm-azure.sh),
so it is never in Pulumi state: a keyvault.Secret resource keeps its properties.value in state, and a key written by
custom data sits in the VM's or scale set's model, which Azure returns to whoever may read it (osProfile.customData
is write-only in the API, but the Pulumi state keeps the input). The deploy's own secret is empty (the scope of the
roles on it, components/clouds/azure/slurm_identity.py munge_secret): an empty value holds no key.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..cloud_init import munge_key_files
from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, stack_rule
from ..props import get
from .resource_types import SECRET, VM, VMSS
from .slurm_head import files_of, head_nodes

MUNGE = "munge"
HEAD_SETTINGS = "/etc/gpufleet/bootstrap.env"
VAULT_SETTING = "GPUFLEET_KEY_VAULT="
FIX = "the head node generates the key at first boot and sets it in the stack's vault; nodes read it with Get Secret"


def _names(node: Node) -> list[str]:
    return [node.name, *(value for key in ("secretName", "name") if isinstance(value := get(node.props, key), str))]


def check_munge_key(stack: Stack, config: Config) -> Iterator[Finding]:
    for head in head_nodes(stack):
        files = files_of(head)
        if not isinstance(files, dict):
            continue  # custom data unknown until the engine resolves it
        if not any(line.startswith(VAULT_SETTING) for line in (files.get(HEAD_SETTINGS) or "").splitlines()):
            yield head.urn, (f"the Slurm head node names no Key Vault for its munge key ({HEAD_SETTINGS} sets no "
                             f"{VAULT_SETTING.rstrip('=')}): {FIX}")
    for secret in stack.of_type(SECRET):
        # Anything but the empty string, an unknown value included, may be the key.
        if any(MUNGE in name.lower() for name in _names(secret)) and get(secret.props, "properties", "value") != "":
            yield secret.urn, ("a Key Vault Secret resource holds the munge key, so its value sits in Pulumi "
                               f"state: remove it; {FIX}")
    for node in stack.of_type(VM, VMSS):
        written = munge_key_files(files_of(node))
        if written:
            yield node.urn, (f"the custom data writes the munge key ({', '.join(written)}), kept in Pulumi state "
                             f"and the machine's model: remove it; {FIX}")


RULES: list[Rule] = [
    stack_rule(
        "azure-slurm-munge-key-in-vault",
        "A Slurm cluster's munge key lives only in the stack's Key Vault, set by the head node: no Key Vault Secret "
        "resource or custom data carries it.",
        MANDATORY,
        "azure",
        [VM, VMSS, SECRET],
        check_munge_key,
    ),
]
