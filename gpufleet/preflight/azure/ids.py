"""Azure Resource Manager ids, read the way ARM writes them: /subscriptions/S/resourceGroups/G/providers/NS/type/name
[/type/name...]. The stack's validation checked their shape already (gpufleet/clouds/azure/stack_model.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArmId:
    subscription: str
    resource_group: str
    names: tuple[str, ...]
    """The names after the provider namespace, in order: (vnet, subnet), (vault, key, version)..."""


def parse(resource_id: str) -> ArmId | None:
    parts = resource_id.strip("/").split("/")
    if len(parts) < 4 or parts[0].lower() != "subscriptions" or parts[2].lower() != "resourcegroups":
        return None
    rest = parts[6:] if len(parts) > 5 and parts[4].lower() == "providers" else []
    return ArmId(parts[1], parts[3], tuple(rest[1::2]))


def region_key(name: str) -> str:
    """A region as ARM names it in ids and filters ('East US' -> 'eastus'): gallery target regions come back as
    display names."""
    return name.replace(" ", "").lower()
