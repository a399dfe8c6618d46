"""Checks only Alibaba Cloud stacks need: brought vSwitches match the zones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...spec.errors import SpecError

if TYPE_CHECKING:
    from ...resolve import ResolvedCluster


def vswitch_per_zone(cluster: ResolvedCluster) -> Iterator[SpecError]:
    net = cluster.spec.network
    if net.vswitch_ids and len(net.vswitch_ids) != len(net.zones):
        yield SpecError(
            "network.vswitch_ids",
            f"list one vSwitch per zone, in the order of network.zones ({len(net.zones)} zones, "
            f"{len(net.vswitch_ids)} vSwitches)",
        )


CHECKS = (vswitch_per_zone,)
