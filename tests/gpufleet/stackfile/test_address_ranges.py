"""Admin ingress is judged by the public space its ranges cover, in the spec and in every cloud's exposure rule:
any spelling, any split of a wide range into pieces, IPv4 and IPv6."""

from __future__ import annotations

import copy
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Any

import pytest
from aws_rule_args import validate
from conftest import read_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid
from gpufleet.stackfile.address_ranges import MAX_PUBLIC_PREFIX, NON_PUBLIC, public_addresses

Net = IPv4Network | IPv6Network


def _aws_group(nets: list[Net]) -> tuple[str, str, dict[str, Any]]:
    ingress = [{"protocol": "tcp", "fromPort": 22, "toPort": 22,
                "cidrBlocks" if n.version == 4 else "ipv6CidrBlocks": [str(n)]} for n in nets]
    return "aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", {"ingress": ingress}


def _azure_rule(nets: list[Net]) -> tuple[str, str, dict[str, Any]]:
    props = {"direction": "Inbound", "access": "Allow", "protocol": "Tcp", "destinationPortRange": "22",
             "sourceAddressPrefixes": [str(n) for n in nets]}
    return "azure-no-internet-admin-inbound", "azure-native:network:SecurityRule", props


def _alicloud_rule(net: Net) -> tuple[str, str, dict[str, Any]]:
    props = {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22", "policy": "accept",
             "cidrIp" if net.version == 4 else "ipv6CidrIp": str(net)}
    return "alicloud-no-public-admin-ingress", "alicloud:ecs/securityGroupRule:SecurityGroupRule", props


def _fires(case: tuple[str, str, dict[str, Any]]) -> bool:
    return bool(validate(*case))


def _spec_errors(nets: list[Net]) -> list[str]:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    raw["network"]["admin_cidrs"] = [str(n) for n in nets]
    try:
        resolve_cluster(raw)
    except SpecInvalid as caught:
        return [str(e) for e in caught.errors if str(e).startswith("network.admin_cidrs")]
    return []


def _public(version: int) -> st.SearchStrategy[Net]:
    """A range wider than the limit that is not inside special-purpose space (so it covers public addresses)."""
    bits = 32 if version == 4 else 128
    widest = MAX_PUBLIC_PREFIX[version] - 1
    return st.builds(
        lambda address, prefix: ip_network((address, prefix), strict=False),
        st.integers(0, 2**bits - 1), st.integers(0, widest),
    ).filter(lambda net: public_addresses(net) > 2 ** (bits - MAX_PUBLIC_PREFIX[version]))


def _pieces(net: Net, depth: int) -> list[Net]:
    """`net` split into 2**depth ranges, the way a crafted stack spreads one wide range over several."""
    return list(net.subnets(prefixlen_diff=depth))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(_public(4), st.integers(0, 4))
def test_wide_public_ipv4_refused_however_split(net: Net, depth: int) -> None:
    pieces = _pieces(net, min(depth, 32 - net.prefixlen))
    assert _fires(_aws_group(pieces)) and _fires(_azure_rule(pieces))
    assert _spec_errors(pieces), pieces


@SETTINGS
@given(_public(6), st.integers(0, 4))
def test_wide_public_ipv6_refused_however_split(net: Net, depth: int) -> None:
    pieces = _pieces(net, depth)
    assert _fires(_aws_group(pieces)) and _fires(_azure_rule(pieces))


@SETTINGS
@given(st.one_of(_public(4), _public(6)))
def test_each_cloud_rule_judges_one_wide_range(net: Net) -> None:
    for case in (_aws_group([net]), _azure_rule([net]), _alicloud_rule(net)):
        assert _fires(case), case


@SETTINGS
@given(st.sampled_from([n for v in (4, 6) for n in NON_PUBLIC[v]]), st.integers(0, 8), st.integers(0, 2**32))
def test_special_purpose_space_is_not_public(space: Net, extra: int, pick: int) -> None:
    subnets = list(space.subnets(prefixlen_diff=min(extra, space.max_prefixlen - space.prefixlen)))
    inner = subnets[pick % len(subnets)]
    assert public_addresses(inner) == 0
    for case in (_aws_group([inner]), _azure_rule([inner]), _alicloud_rule(inner)):
        assert not _fires(case), case


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(MAX_PUBLIC_PREFIX[4], 32))
def test_a_narrow_public_range_is_allowed(address: int, prefix: int) -> None:
    net = ip_network((address, prefix), strict=False)
    assert not _fires(_aws_group([net])) and not _fires(_alicloud_rule(net))
    assert _spec_errors([net]) == []


@pytest.mark.parametrize("spelling", ["0.0.0.1/0", " 0.0.0.0/0", "0.0.0.0/1", "::/0", "::/1", "2000::/3"])
def test_spellings_of_the_internet(spelling: str) -> None:
    props = {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22", "policy": "accept",
             "ipv6CidrIp" if ":" in spelling else "cidrIp": spelling}
    (message,) = validate("alicloud-no-public-admin-ingress", "alicloud:ecs/securityGroupRule:SecurityGroupRule", props)
    assert "public IPv" in message and "admin_cidrs" in message


def test_spec_names_the_field_and_the_reason() -> None:
    (error,) = _spec_errors([ip_network("0.0.0.0/1"), ip_network("128.0.0.0/1")])
    assert "0.0.0.0/1, 128.0.0.0/1 open SSH to" in error and "more than a /24 holds" in error


@SETTINGS
@given(_public(4), st.sampled_from(["::ffff:0:0", "64:ff9b::"]))
def test_ipv6_ranges_carrying_ipv4_are_judged_as_ipv4(net: Net, prefix: str) -> None:
    """IPv4-mapped and NAT64 prefixes carry IPv4 addresses: a /96 of them is the whole IPv4 internet, not 2**32 IPv6
    addresses under the /64 limit."""
    base = int(ip_network(f"{prefix}/96").network_address)
    embedded = ip_network((base + int(net.network_address), 96 + net.prefixlen))
    for case in (_aws_group([embedded]), _azure_rule([embedded]), _alicloud_rule(embedded)):
        assert _fires(case), (case, embedded)
