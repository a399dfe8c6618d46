"""slurmctld is reachable from inside the cluster only: the head node has no public address, and its security
groups admit slurmctld's port from security groups (the cluster nodes'), never from an address range.

Whoever reaches slurmctld with a valid munge credential submits and cancels jobs; an address range (0.0.0.0/0, the
VPC's CIDR, any other) admits every machine in it, not the cluster's nodes. The head node is reached by SSM Session
Manager, so it needs no public address either.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, as_bool, as_int, get, items
from .resource_types import (
    ALL_PROTOCOLS,
    EIP,
    EIP_ASSOCIATION,
    INSTANCE,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
    SUBNET,
    VPC_INGRESS_RULE,
)
from .slurm_head import head_nodes

# slurm.conf.5 (22.05) SlurmctldPort: 6817 by default, the port gpufleet's slurm.conf sets (components/slurm/site.py).
SLURMCTLD_PORT = 6817
FIX = ("admit slurmctld's port only from the cluster nodes' security group (source_security_group_id / "
       "referenced_security_group_id), never from an address range")


def _covers_slurmctld(protocol: Any, from_port: Any, to_port: Any) -> bool:
    proto = str(protocol).lower() if isinstance(protocol, (str, int)) else None
    if proto in ALL_PROTOCOLS:
        return True  # every protocol is every port, whatever from/to say
    if proto not in ("tcp", "6"):
        return False
    low, high = as_int(from_port), as_int(to_port)
    return low is not None and high is not None and low <= SLURMCTLD_PORT <= high


def _ranges(*values: Any) -> list[str]:
    """The address ranges and prefix lists a rule admits from (unknown values left out)."""
    return [str(item) for value in values for item in (value if isinstance(value, list) else [value])
            if isinstance(item, str) and item]


def _inline_openings(group: Node) -> Iterator[tuple[str, list[str]]]:
    rules = items(group.props, "ingress")
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        if rule is not UNKNOWN and _covers_slurmctld(get(rule, "protocol"), get(rule, "fromPort"), get(rule, "toPort")):
            sources = _ranges(get(rule, "cidrBlocks"), get(rule, "ipv6CidrBlocks"), get(rule, "prefixListIds"))
            if sources:
                yield f"ingress[{index}]", sources


def _rule_sources(rule: Node) -> list[str]:
    props = rule.props
    if rule.type == SECURITY_GROUP_RULE:
        if get(props, "type") != "ingress" or not _covers_slurmctld(
                get(props, "protocol"), get(props, "fromPort"), get(props, "toPort")):
            return []
        return _ranges(get(props, "cidrBlocks"), get(props, "ipv6CidrBlocks"), get(props, "prefixListIds"))
    if not _covers_slurmctld(get(props, "ipProtocol"), get(props, "fromPort"), get(props, "toPort")):
        return []
    return _ranges(get(props, "cidrIpv4"), get(props, "cidrIpv6"), get(props, "prefixListId"))


def _open_to_ranges(head: Node, stack: Stack) -> Iterator[Finding]:
    # The groups its vpc_security_group_ids name (else every group it depends on: how else would it need one).
    for group in stack.dependencies_of(head, SECURITY_GROUP, prop="vpcSecurityGroupIds"):
        for where, sources in _inline_openings(group):
            yield group.urn, (f"{where} of the head node's security group admits slurmctld's port {SLURMCTLD_PORT} "
                              f"from {', '.join(sources)}: {FIX}")
        for rule in stack.dependents_of(group, SECURITY_GROUP_RULE, VPC_INGRESS_RULE):
            if group.urn not in rule.property_dependencies.get("securityGroupId", frozenset({group.urn})):
                continue  # a rule that only names the group as its source
            sources = _rule_sources(rule)
            if sources:
                yield rule.urn, (f"the rule admits slurmctld's port {SLURMCTLD_PORT} on the head node's security "
                                 f"group from {', '.join(sources)}: {FIX}")


def _public_address(head: Node, stack: Stack) -> Iterator[str]:
    asked = get(head.props, "associatePublicIpAddress")
    if as_bool(asked) is True:
        yield "the head node gets a public IP: set associate_public_ip_address = False (it is reached by SSM)"
    elif asked is None:
        for subnet in stack.dependencies_of(head, SUBNET, prop="subnetId"):
            if as_bool(get(subnet.props, "mapPublicIpOnLaunch")) is True:
                yield (f"the head node sits in subnet {subnet.name}, which maps a public IP on launch: put it in a "
                       "private subnet of the cluster, or set associate_public_ip_address = False")
    for address in stack.dependents_of(head, EIP, EIP_ASSOCIATION):
        yield f"elastic IP {address.name} gives the head node a public address: remove it (it is reached by SSM)"


def check_slurmctld_private(stack: Stack, config: Config) -> Iterator[Finding]:
    for head in head_nodes(stack):
        yield from ((head.urn, problem) for problem in _public_address(head, stack))
        yield from _open_to_ranges(head, stack)


RULES: list[Rule] = [
    stack_rule(
        "aws-slurmctld-not-public",
        "The Slurm head node has no public address, and its security groups admit slurmctld (6817) only from "
        "security groups, never from an address range.",
        MANDATORY,
        "aws",
        [INSTANCE, SUBNET, EIP, EIP_ASSOCIATION, SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE],
        check_slurmctld_private,
    ),
]
