"""Checks only Azure stacks need: InfiniBand reaches only inside one scale set and reserves an address range;
a Uniform scale set runs one VM size and one priority; capacity reservations, keys and subnets have limits."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Network
from typing import TYPE_CHECKING

from ...spec.errors import SpecError
from .subnets import node_subnet_cidr

if TYPE_CHECKING:
    from ...resolve import ResolvedCluster


def infiniband_limits(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("azure", "ib_scale_set_max_vms"))
    reserved = IPv4Network(str(cluster.catalog.limit("azure", "ib_reserved_cidr")))
    ib_groups = [group for group in cluster.groups if group.rdma]
    for group in ib_groups:
        if group.spec.size.max > most:
            yield SpecError(
                group.path("size.max"),
                f"InfiniBand reaches only inside one scale set with singlePlacementGroup, at most {most} VMs "
                f"(300 through a free Azure support request; then set the limit in your fork); split the group "
                f"or lower size.max",
            )
    cidr = cluster.spec.network.cidr
    if ib_groups and cidr is not None and cidr.overlaps(reserved):
        yield SpecError("network.cidr", f"{cidr} overlaps {reserved}, which the InfiniBand network reserves; move it")


def one_size_per_scale_set(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A scale set has one sku: fallback sizes would need a second scale set, and IB never crosses two."""
    for group in cluster.groups:
        for j, name in enumerate(group.spec.instance_types[1:], start=1):
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"an Azure scale set runs one VM size: {name} cannot be a fallback of "
                f"{group.spec.instance_types[0]}; give it its own node group",
            )


def capacity_fits_orchestration(cluster: ResolvedCluster) -> Iterator[SpecError]:
    prefix = str(cluster.catalog.limit("azure", "capacity_reservation_unsupported_prefix"))
    for group in cluster.groups:
        spec = group.spec
        if spec.capacity == "reservation":
            size = spec.instance_types[0]
            if size.startswith(prefix):
                yield SpecError(
                    group.path("capacity"),
                    f"Azure capacity reservations do not support ND-series sizes ({size}); use on-demand or spot",
                )
            elif group.rdma:
                yield SpecError(
                    group.path("capacity"),
                    "Azure capacity reservations do not support singlePlacementGroup scale sets, which InfiniBand "
                    "needs; set rdma: off or use on-demand",
                )
        if spec.capacity == "spot" and group.rdma and spec.on_demand_base:
            yield SpecError(
                group.path("on_demand_base"),
                "an InfiniBand group is one Uniform scale set, all Spot or all Regular: set on_demand_base 0, "
                "or put the regular nodes in a node group of their own",
            )


def customer_key_settings(cluster: ResolvedCluster) -> Iterator[SpecError]:
    storage = cluster.spec.storage
    brought = storage.kms_key != "create"
    if brought and not storage.key_vault_id:
        yield SpecError("storage.key_vault_id", "a brought kms_key needs the resource id of its vault")
    if storage.key_vault_id and not brought:
        yield SpecError("storage.key_vault_id", "applies to a brought kms_key only; remove it or set kms_key")
    if storage.ephemeral_os_disk:
        yield SpecError(
            "storage.ephemeral_os_disk",
            "refused: the OS disk is encrypted with a customer-managed key, and Azure cannot rotate that key on "
            "ephemeral OS disks without deleting the VMs first; set it false",
        )


def subnet_holds_nodes(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Only networks gpufleet creates can be sized offline; a brought subnet's size is unknown here."""
    cidr = cluster.spec.network.cidr
    if cidr is None:
        return
    subnet = node_subnet_cidr(cidr)
    if subnet is None:
        yield SpecError("network.cidr", f"{cidr} is too small for a node subnet; use a /16 to /24")
        return
    usable = cluster.usable_addresses(subnet)
    # One node subnet for every zone: every group's nodes at max size count against it.
    needed = cluster.addresses_at_max(per_zone=False).get("", 0)
    if needed > usable:
        yield SpecError(
            "network.cidr",
            f"the node subnet {subnet} ({usable} usable addresses) cannot hold {needed} nodes at max size; "
            "widen network.cidr or lower size.max",
        )


CHECKS = (
    infiniband_limits,
    one_size_per_scale_set,
    capacity_fits_orchestration,
    customer_key_settings,
    subnet_holds_nodes,
)
