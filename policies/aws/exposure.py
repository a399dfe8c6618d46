"""AWS exposure rules: IMDSv2, no SSH/RDP/all ports open to the internet, no public IPs on nodes,
security groups on the network interfaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.address_ranges import parse_range

from ..admin_openings import Opening, described, group_of, groups_too_wide, verdict
from ..meta import MANDATORY, Config, Finding, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, as_bool, as_int, get, items
from .resource_types import (
    ALL_PROTOCOLS,
    DEFAULT_SECURITY_GROUP,
    INFRASTRUCTURE_CONFIGURATION,
    INSTANCE,
    LAUNCH_TEMPLATE,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
    VPC,
    VPC_EGRESS_RULE,
    VPC_INGRESS_RULE,
)

ADMIN_PORTS = (22, 3389)


def check_imdsv2(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    block = "instanceMetadataOptions" if resource_type == INFRASTRUCTURE_CONFIGURATION else "metadataOptions"
    arg = "instance_metadata_options" if block == "instanceMetadataOptions" else "metadata_options"
    options = get(props, block)
    if options is UNKNOWN:
        return
    tokens, endpoint = get(options, "httpTokens"), get(options, "httpEndpoint")
    if tokens is UNKNOWN or tokens == "required" or endpoint == "disabled":
        return
    shown = "not set (defaults to 'optional')" if tokens is None else repr(tokens)
    yield f"IMDSv1 stays enabled ({arg}.http_tokens is {shown}): set {arg}.http_tokens = 'required'"


def _ports_exposed(protocol: Any, from_port: Any, to_port: Any) -> str | None:
    """What a rule open to the internet exposes: 'all ports', 'port 22'... or None."""
    proto = str(protocol).lower() if isinstance(protocol, (str, int)) else None
    if proto is None:
        return None
    if proto in ALL_PROTOCOLS:
        return "all ports"
    if proto not in ("tcp", "6", "udp", "17"):
        return None
    low, high = as_int(from_port), as_int(to_port)
    if low is None or high is None:
        return None
    if low <= 0 and high >= 65535:
        return "all ports"
    hit = [str(port) for port in ADMIN_PORTS if low <= port <= high]
    return f"port {' and '.join(hit)}" if hit else None


def _listed(*values: Any) -> list[Any]:
    """The items of CIDR values (lists or single values)."""
    return [item for value in values for item in (value if isinstance(value, list) else [value])]


def _opening(urn: str, where: str, exposed: str | None, *values: Any) -> list[Opening]:
    """The rule as an Opening when it opens admin ports to some address range (unknown and unreadable ones skipped)."""
    nets = tuple(net for item in _listed(*values) if (net := parse_range(item)) is not None)
    return [Opening(urn, where, exposed, tuple(map(str, nets)), nets)] if exposed and nets else []


def openings(resource_type: str, props: Props, urn: str) -> list[Opening]:
    """The admin openings a security group's inline ingress, or one ingress rule resource, declares."""
    if resource_type == SECURITY_GROUP:
        rules = items(props, "ingress")
        return [
            found
            for index, rule in enumerate(rules if isinstance(rules, list) else [])
            for found in _opening(urn, f"ingress[{index}]",
                                  _ports_exposed(get(rule, "protocol"), get(rule, "fromPort"), get(rule, "toPort")),
                                  get(rule, "cidrBlocks"), get(rule, "ipv6CidrBlocks"))
        ]
    if resource_type == SECURITY_GROUP_RULE:
        if get(props, "type") != "ingress":
            return []
        exposed = _ports_exposed(get(props, "protocol"), get(props, "fromPort"), get(props, "toPort"))
        return _opening(urn, "the rule", exposed, get(props, "cidrBlocks"), get(props, "ipv6CidrBlocks"))
    exposed = _ports_exposed(get(props, "ipProtocol"), get(props, "fromPort"), get(props, "toPort"))
    return _opening(urn, "the rule", exposed, get(props, "cidrIpv4"), get(props, "cidrIpv6"))


HINT = "allow only network.admin_cidrs (or use SSM Session Manager) instead"


def check_public_admin_ingress(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    # Judged by the public space the ranges cover together (gpufleet/stackfile/address_ranges.py), so a group's
    # rules that split the internet between them (0.0.0.0/1 + 128.0.0.0/1) count as one.
    found = openings(resource_type, props, "")
    wide = verdict(found)
    if wide:
        together = "together " if len(found) > 1 else ""
        yield f"{described(found)}: {together}{wide}: {HINT}"


def check_admin_ingress_per_group(stack: Stack, config: Config) -> Iterator[Finding]:
    by_group: dict[str, list[Opening]] = {}
    for node in stack.of_type(SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE):
        group = node.urn if node.type == SECURITY_GROUP else group_of(node, "securityGroupId")
        by_group.setdefault(group, []).extend(openings(node.type, node.props, node.urn))
    yield from groups_too_wide(stack, by_group, HINT)


def check_no_public_ip(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == INSTANCE:
        if as_bool(get(props, "associatePublicIpAddress")) is True:
            yield "the instance gets a public IP: set associate_public_ip_address = False (private subnets)"
        return
    interfaces = items(props, "networkInterfaces")
    interfaces = interfaces if isinstance(interfaces, list) else []
    # EC2 refuses the field on a launch with several interfaces, so there the fix is to leave it unset.
    several = len(interfaces) > 1
    fix = "leave associate_public_ip_address unset" if several else "set associate_public_ip_address = False"
    for index, interface in enumerate(interfaces):
        if as_bool(get(interface, "associatePublicIpAddress")) is True:
            yield (
                f"network_interfaces[{index}] asks for a public IP: {fix}; "
                "GPU nodes live in private subnets with NAT"
            )


def check_sg_on_interfaces(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    interfaces = items(props, "networkInterfaces")
    if not isinstance(interfaces, list) or not interfaces:
        return
    for key, arg in (
        ("vpcSecurityGroupIds", "vpc_security_group_ids"),
        ("securityGroupNames", "security_group_names"),
    ):
        value = items(props, key)
        if isinstance(value, list) and value:
            yield (
                f"{arg} is set beside network_interfaces, which EC2 rejects: move the security groups to "
                "each network_interfaces[].security_groups"
            )


def check_default_sg_closed(stack: Stack, config: Config) -> Iterator[Finding]:
    closing = "the default security group is what a resource without one gets: leave it with no rules"
    managed: set[str] = set()
    for group in stack.of_type(DEFAULT_SECURITY_GROUP):
        managed.update(vpc.urn for vpc in stack.dependencies_of(group, VPC, prop="vpcId"))
        for direction in ("ingress", "egress"):
            rules = items(group.props, direction)
            if isinstance(rules, list) and rules:
                yield group.urn, f"the VPC's default security group has {direction} rules: remove them; {closing}"
        for rule in stack.dependents_of(group, SECURITY_GROUP_RULE, VPC_INGRESS_RULE, VPC_EGRESS_RULE):
            yield rule.urn, f"the rule opens the VPC's default security group: remove it; {closing}"
    for vpc in stack.of_type(VPC):
        if vpc.urn not in managed:
            yield vpc.urn, (
                "the VPC's default security group keeps its default rules (all traffic within the group, all "
                "egress): manage it with aws.ec2.DefaultSecurityGroup and no ingress or egress rules"
            )


RULES: list[Rule] = [
    resource_rule(
        "aws-imdsv2-required",
        "Instances, launch templates and image-builder instances require IMDSv2 (http_tokens = required).",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, INSTANCE, INFRASTRUCTURE_CONFIGURATION],
        check_imdsv2,
        cis="5.6 (v3.0.0)",
        checkov=("CKV_AWS_79",),
    ),
    resource_rule(
        "aws-no-public-admin-ingress",
        "No security group opens SSH (22), RDP (3389) or all ports to public address space wider than a /24 "
        "(IPv4) or /64 (IPv6), judged by what its ranges cover together.",
        MANDATORY,
        "aws",
        [SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE],
        check_public_admin_ingress,
        cis="5.2, 5.3 (v3.0.0)",
        checkov=("CKV_AWS_24", "CKV_AWS_25", "CKV_AWS_277"),
    ),
    stack_rule(
        "aws-admin-ingress-per-group",
        "The ingress rules of one security group (inline and separate rule resources) together open SSH (22), RDP "
        "(3389) or all ports to no more public address space than a /24 (IPv4) or /64 (IPv6).",
        MANDATORY,
        "aws",
        [SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE],
        check_admin_ingress_per_group,
        cis="5.2, 5.3 (v3.0.0)",
    ),
    resource_rule(
        "aws-no-public-ip",
        "GPU nodes get no public IP address.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, INSTANCE],
        check_no_public_ip,
        checkov=("CKV_AWS_88",),
    ),
    resource_rule(
        "aws-launch-template-sg-on-interfaces",
        "Launch templates with network interfaces put security groups on the interfaces, not the template.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE],
        check_sg_on_interfaces,
    ),
    stack_rule(
        "aws-default-sg-closed",
        "The default security group of every VPC the stack creates has no rules.",
        MANDATORY,
        "aws",
        [VPC, DEFAULT_SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE, VPC_EGRESS_RULE],
        check_default_sg_closed,
        cis="5.4 (v3.0.0)",
        checkov=("CKV2_AWS_12",),
    ),
]
