"""How gpufleet splits a VPC it creates into vSwitches; shared by the sizing check and the network component."""

from __future__ import annotations

from ipaddress import IPv4Network

# A VPC is split in four: one vSwitch per zone (up to four). The NAT gateway takes one address of the
# first zone's vSwitch (an Enhanced NAT gateway sits in a vSwitch of its VPC).
SPLIT_BITS = 2
MAX_ZONES = 4
NAT_ADDRESSES = 1
SMALLEST_PREFIX = 26


def vswitch_cidrs(cidr: IPv4Network, zones: int) -> list[IPv4Network] | None:
    """vSwitch per zone; None when the network is too small to split or there are too many zones."""
    if cidr.prefixlen + SPLIT_BITS > SMALLEST_PREFIX or zones > MAX_ZONES:
        return None
    return list(cidr.subnets(prefixlen_diff=SPLIT_BITS))[:zones]
