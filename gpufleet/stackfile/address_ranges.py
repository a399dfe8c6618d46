"""One judgement of what a set of address ranges opens to: how much public address space it covers.

The stack spec (network.admin_cidrs) and every cloud's exposure rule (policies/*/exposure.py) ask this module,
so `0.0.0.0/1` + `128.0.0.0/1`, `0.0.0.1/0` or `::/1` are judged by what they cover, not by their spelling.

Public space is every address outside the special-purpose ranges below (IANA IPv4 and IPv6 Special-Purpose
Address Registries: RFC 1918 private, RFC 6598 shared, RFC 4193 unique local, loopback, link local,
documentation, benchmarking, multicast, reserved). A set of ranges is too wide when, after merging overlaps,
it covers more public addresses of one family than one range of the limit prefix does: the set counts as one.
IPv6 ranges that stand for IPv4 addresses (IPv4-mapped ::ffff:0:0/96, RFC 4291; the NAT64 well-known prefix
64:ff9b::/96, RFC 6052; both in the IANA IPv6 registry) are judged as the IPv4 addresses they carry, so
::ffff:0:0/96 is all of IPv4, not 2**32 IPv6 addresses under the /64 limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Network, IPv6Network, collapse_addresses, ip_network

Net = IPv4Network | IPv6Network

# The widest public range SSH/RDP may be opened to, as a prefix length: a /24 of IPv4 (256 addresses: an office
# or a VPN's egress range) and a /64 of IPv6 (one subnet). Anything covering more public space is refused.
MAX_PUBLIC_PREFIX = {4: 24, 6: 64}

NON_PUBLIC: dict[int, tuple[Net, ...]] = {
    4: tuple(ip_network(n) for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    )),
    6: tuple(ip_network(n) for n in (
        "::/127", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
    )),
}


# IPv6 prefixes whose last 32 bits are an IPv4 address.
IPV4_EMBEDDING = (IPv6Network("::ffff:0:0/96"), IPv6Network("64:ff9b::/96"))


def cidrs_written_as_text(value: object) -> object:
    """A field validator's input, refused unless each range is text: pydantic would read a number or a boolean as an
    address (`true` -> 0.0.0.1/32)."""
    for item in value if isinstance(value, list) else [value]:
        if item is not None and not isinstance(item, str):
            raise ValueError(f"{item!r} is not a CIDR; write it as text like 10.42.0.0/16")
    return value


def as_ipv4(net: Net) -> list[Net]:
    """`net` with the part of it inside an IPv4-embedding IPv6 prefix replaced by the IPv4 range it carries."""
    if net.version == 4:
        return [net]
    out: list[Net] = [net]
    for prefix in IPV4_EMBEDDING:
        if prefix.subnet_of(net):  # type: ignore[arg-type]
            out.append(IPv4Network("0.0.0.0/0"))
        elif net.subnet_of(prefix):  # type: ignore[arg-type]
            low = int(net.network_address) & 0xFFFFFFFF
            return [IPv4Network((low, 32 - (128 - net.prefixlen)))]
    return out


def parse_range(text: object) -> Net | None:
    """The range a CIDR or bare address denotes (host bits ignored, as the clouds read them); None if not one."""
    if not isinstance(text, str):
        return None
    try:
        return ip_network(text.strip(), strict=False)
    except ValueError:
        return None


def public_addresses(net: Net) -> int:
    """How many addresses of `net` are public (the special-purpose ranges are disjoint)."""
    count = net.num_addresses
    for special in NON_PUBLIC[net.version]:
        if net.subnet_of(special):  # type: ignore[arg-type]
            return 0
        if special.subnet_of(net):  # type: ignore[arg-type]
            count -= special.num_addresses
    return count


def too_wide(ranges: Iterable[Net]) -> str | None:
    """How much public space the set covers when that is too much ("3,702,258,688 public IPv4 addresses, more
    than a /24 holds"), per address family; None when the set stays within the limits."""
    ranges = [part for net in ranges for part in as_ipv4(net)]
    reasons: list[str] = []
    for version in (4, 6):
        merged = collapse_addresses(net for net in ranges if net.version == version)  # type: ignore[type-var]
        public = sum(public_addresses(net) for net in merged)
        limit = MAX_PUBLIC_PREFIX[version]
        if public > 2 ** ((32 if version == 4 else 128) - limit):
            reasons.append(f"{public:,} public IPv{version} addresses, more than a /{limit} holds")
    return " and ".join(reasons) or None
