"""Checks only Azure stacks need: InfiniBand reaches only inside one scale set, and reserves an address range."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Network
from typing import TYPE_CHECKING

from ...spec.errors import SpecError

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
                f"(300 through a support request); split the group or lower size.max",
            )
    cidr = cluster.spec.network.cidr
    if ib_groups and cidr is not None and cidr.overlaps(reserved):
        yield SpecError("network.cidr", f"{cidr} overlaps {reserved}, which the InfiniBand network reserves; move it")


CHECKS = (infiniband_limits,)
