"""How gpufleet splits a VNet it creates; shared by the subnet-size check and the network component."""

from __future__ import annotations

from ipaddress import IPv4Network

# The node subnet takes the first half of the VNet; the rest stays free for a Bastion or private
# endpoint subnet the user adds later.
NODE_SUBNET_BITS = 1
SMALLEST_PREFIX = 29  # Azure's smallest subnet is a /29


def node_subnet_cidr(cidr: IPv4Network) -> IPv4Network | None:
    """The node subnet of a VNet gpufleet creates; None when the VNet is too small to split."""
    if cidr.prefixlen + NODE_SUBNET_BITS > SMALLEST_PREFIX:
        return None
    return next(cidr.subnets(prefixlen_diff=NODE_SUBNET_BITS))


def lustre_subnet_cidr(cidr: IPv4Network, prefixlen: int) -> IPv4Network | None:
    """The Azure Managed Lustre subnet of a VNet gpufleet creates: the first /prefixlen of the half the node
    subnet leaves free; None when that half cannot hold it."""
    free = list(cidr.subnets(prefixlen_diff=NODE_SUBNET_BITS))[1:] if cidr.prefixlen + NODE_SUBNET_BITS <= 32 else []
    if not free or prefixlen < free[0].prefixlen or prefixlen > SMALLEST_PREFIX:
        return None
    return next(free[0].subnets(new_prefix=prefixlen))
