"""Azure spot rule: spot scale sets evict with Delete, so an evicted VM frees its quota and disks and
autoscale can replace it (Deallocate keeps both, billed)."""

from __future__ import annotations

from collections.abc import Iterator

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, get
from .resource_types import VM_PROFILE, VMSS


def check_spot_eviction_delete(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    profile = get(props, VM_PROFILE)
    if profile is UNKNOWN or str(get(profile, "priority")).lower() != "spot":
        return
    policy = get(profile, "evictionPolicy")
    if policy is not UNKNOWN and str(policy).lower() != "delete":
        shown = "not set (Deallocate)" if policy is None else repr(policy)
        yield (
            f"spot scale set with eviction_policy {shown}: set virtual_machine_profile.eviction_policy = 'Delete' "
            "(deallocated VMs keep quota and billed disks, and autoscale cannot replace them)"
        )


RULES: list[Rule] = [
    resource_rule(
        "azure-spot-eviction-delete",
        "Spot scale sets use eviction policy Delete.",
        MANDATORY, "azure", [VMSS], check_spot_eviction_delete,
    ),
]
