"""Checks only AWS stacks need: capacity blocks, and subnets large enough for max size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...spec.errors import SpecError
from .subnets import private_subnet_cidrs

if TYPE_CHECKING:
    from ...resolve import ResolvedCluster


def capacity_blocks_fixed(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("aws", "capacity_block_max_instances"))
    for group in cluster.groups:
        if group.spec.capacity != "capacity-block":
            continue
        s = group.spec.size
        if not s.min == s.desired == s.max:
            yield SpecError(
                group.path("size"),
                f"a capacity block runs a fixed count: set min = desired = max (got {s.min}/{s.desired}/{s.max})",
            )
        if s.max > most:
            yield SpecError(group.path("size.max"), f"a capacity block holds at most {most} instances")


def brought_security_group(cluster: ResolvedCluster) -> Iterator[SpecError]:
    net = cluster.spec.network
    if net.security_group_id and net.admin_cidrs:
        yield SpecError(
            "network.admin_cidrs",
            "applies to the security group gpufleet creates; add the SSH rule to the brought security_group_id "
            "or leave admin_cidrs empty",
        )


def subnets_hold_nodes(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Only networks gpufleet creates can be sized offline; a brought subnet's size is unknown here."""
    cidr = cluster.spec.network.cidr
    if cidr is None:
        return
    subnets = private_subnet_cidrs(cidr, len(cluster.spec.network.zones))
    if subnets is None:
        yield SpecError("network.cidr", f"{cidr} is too small to split into private subnets; use a /16")
        return
    usable = cluster.usable_addresses(subnets[0])
    for zone, needed in sorted(cluster.addresses_at_max().items()):
        if needed > usable:
            yield SpecError(
                "network.cidr",
                f"the private subnet in {zone} ({subnets[0].prefixlen}-bit prefix, {usable} usable addresses) cannot "
                f"hold {needed} node addresses at max size; widen network.cidr or lower size.max",
            )


CHECKS = (capacity_blocks_fixed, brought_security_group, subnets_hold_nodes)
