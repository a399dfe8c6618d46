"""How gpufleet splits a VPC it creates; shared by the subnet-size check and the network component."""

from __future__ import annotations

from ipaddress import IPv4Network

# A VPC is split in four: one private subnet per zone (up to three) and the last quarter for the
# small public subnets that hold the NAT gateways.
SPLIT_BITS = 2
PUBLIC_PREFIX_EXTRA = 4
MAX_ZONES = 3


def private_subnet_cidrs(cidr: IPv4Network, zones: int) -> list[IPv4Network] | None:
    """Private subnet per zone; None when the network is too small to split."""
    if cidr.prefixlen + SPLIT_BITS + PUBLIC_PREFIX_EXTRA > 28 or zones > MAX_ZONES:
        return None
    return list(cidr.subnets(prefixlen_diff=SPLIT_BITS))[:zones]


def public_subnet_cidrs(cidr: IPv4Network, zones: int) -> list[IPv4Network]:
    last_quarter = list(cidr.subnets(prefixlen_diff=SPLIT_BITS))[-1]
    return list(last_quarter.subnets(prefixlen_diff=PUBLIC_PREFIX_EXTRA))[:zones]

