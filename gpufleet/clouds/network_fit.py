"""The one message every cloud gives when the network it creates is too small: it names the prefix that fits.

Each cloud splits network.cidr the same way in kind: node subnets `split_bits` longer than the network (AWS and
Alibaba quarters, Azure a half), each losing the cloud's reserved addresses, none longer than the cloud allows
(`longest_network`: the longest network prefix its split still works for). The fitting prefix is the longest
network prefix (the smallest network) whose node subnets hold the most addresses any one subnet must take, never
wider than the cloud's widest network; so a message never suggests the prefix given or a longer one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network

# The widest private range (RFC 1918 10.0.0.0/8): no created network is wider, whatever the cloud allows.
WIDEST_PRIVATE = 8


@dataclass(frozen=True)
class Split:
    """How one cloud splits a network it creates into node subnets."""

    parts: str
    """What the network is split into, for the message ("private and public subnets", "vSwitches")."""
    subnet: str
    """One node subnet, for the message ("private subnet", "vSwitch", "node subnet")."""
    split_bits: int
    longest_network: int
    reserved: int
    widest: int = WIDEST_PRIVATE

    def usable(self, network_prefix: int) -> int:
        """Addresses left for nodes in one node subnet of a /network_prefix network."""
        return 2 ** (32 - network_prefix - self.split_bits) - self.reserved

    def fitting_prefix(self, needed: int) -> int | None:
        """The longest network prefix whose node subnets each hold `needed` addresses; None when even the widest
        network cannot."""
        for prefix in range(self.longest_network, max(self.widest, WIDEST_PRIVATE) - 1, -1):
            if self.usable(prefix) >= needed:
                return prefix
        return None


def _advice(split: Split, needed: int) -> str:
    fits = split.fitting_prefix(needed)
    if fits is None:
        return (f"no network gpufleet creates holds that (a /{max(split.widest, WIDEST_PRIVATE)} gives "
                f"{split.usable(max(split.widest, WIDEST_PRIVATE))} per {split.subnet}): lower size.max")
    return f"use a /{fits} or larger, or lower size.max"


def size_problems(split: Split, cidr: IPv4Network, needed: Mapping[str, int], what: str) -> Iterator[str]:
    """Why `cidr` cannot hold the addresses each zone needs (`needed`: zone -> addresses, "" for one subnet of
    every zone), each naming the prefix that fits; nothing when it holds them. `what` says what is counted."""
    most = max(needed.values(), default=0)
    if cidr.prefixlen > split.longest_network:
        fits = split.fitting_prefix(most)
        advice = f"use a /{fits} or larger" if fits is not None else _advice(split, most)
        yield f"{cidr} is too small to split into {split.parts}; {advice}"
        return
    usable = split.usable(cidr.prefixlen)
    subnet_bits = cidr.prefixlen + split.split_bits
    for zone, count in sorted(needed.items()):
        if count > usable:
            where = f"the {split.subnet} in {zone}" if zone else f"the {split.subnet}"
            yield (f"{cidr} is too small: {where} ({subnet_bits}-bit prefix, {usable} usable addresses) cannot hold "
                   f"{count} {what}; {_advice(split, count)}")
