"""Azure InfiniBand rules: an IB scale set is Uniform with a single placement group (IB reaches only inside
one) and holds at most the published number of VMs at max size; the VNet keeps clear of the address range
the InfiniBand network reserves. IB sizes and both limits come from the catalog (catalog/data/azure.yaml).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from ipaddress import IPv4Network, ip_network
from typing import Any

from ..meta import MANDATORY, Finding, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, as_bool, get, items
from .readers import scale_set_size
from .resource_types import AUTOSCALE, VMSS, VNET


def _catalog() -> Any:
    from gpufleet.catalog import load_catalog  # the catalog reads data files: only when a rule runs

    return load_catalog()


def _is_infiniband(node: Node) -> bool:
    size = get(node.props, "sku", "name")
    found = _catalog().get("azure", size) if isinstance(size, str) else None
    return found is not None and found.fabric.kind == "infiniband" and found.fabric.interfaces > 0


def check_ib_scale_sets(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    most = int(_catalog().limit("azure", "ib_scale_set_max_vms"))
    for node in stack.of_type(VMSS):
        if not _is_infiniband(node):
            continue
        size = get(node.props, "sku", "name")
        if str(get(node.props, "orchestrationMode")).lower() == "flexible":
            yield node.urn, f"{size} scale set uses Flexible orchestration, which has no InfiniBand: use Uniform"
        single = get(node.props, "singlePlacementGroup")
        if single is not UNKNOWN and as_bool(single) is not True:
            yield node.urn, (
                f"{size} scale set without single_placement_group = True: InfiniBand reaches only inside one "
                "placement group, so nodes would not see each other over IB"
            )
        count = scale_set_size(node, stack).count
        if count is not None and count > most:
            yield node.urn, (
                f"{size} scale set reaches {count} VMs at max size: an InfiniBand scale set holds at most {most} "
                "(300 through a support request); split the group or lower size.max"
            )


def check_vnet_clear_of_ib_range(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    if not any(_is_infiniband(node) for node in stack.of_type(VMSS)):
        return
    reserved = IPv4Network(str(_catalog().limit("azure", "ib_reserved_cidr")))
    for vnet in stack.of_type(VNET):
        prefixes = items(vnet.props, "addressSpace", "addressPrefixes")
        for prefix in prefixes if isinstance(prefixes, list) else []:
            try:
                network = ip_network(str(prefix), strict=False)
            except ValueError:
                continue
            if isinstance(network, IPv4Network) and network.overlaps(reserved):
                yield vnet.urn, (
                    f"address space {prefix} overlaps {reserved}, which the InfiniBand network reserves: "
                    "move network.cidr"
                )


RULES: list[Rule] = [
    stack_rule(
        "azure-ib-single-placement-group",
        "InfiniBand scale sets are Uniform, single placement group, and at most 100 VMs at max size.",
        MANDATORY, "azure", [VMSS, AUTOSCALE], check_ib_scale_sets,
    ),
    stack_rule(
        "azure-vnet-clear-of-ib-range",
        "VNets of stacks with InfiniBand scale sets keep clear of 172.16.0.0/16.",
        MANDATORY, "azure", [VMSS, VNET], check_vnet_clear_of_ib_range,
    ),
]
