"""Alibaba Cloud exposure rules: metadata tokens (hardened mode) required, no SSH/RDP/all ports open to the
internet, no public IP on nodes.

Metadata tokens: pulumi-alicloud 4.0.0's ecs.EcsLaunchTemplate and ecs.Instance take `http_tokens`, but
ess.ScalingConfiguration has only `http_endpoint` (enabled | disabled), no token setting; and a launch
template's network interfaces have no traffic mode, so the eRDMA interfaces (ERIs) a scaling
configuration creates cannot come from a launch template. Hence two rules: a mandatory one where a
token setting exists, and an advisory one that names the residual gap on scaling configurations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.address_ranges import parse_range

from ..admin_openings import Opening, described, group_of, groups_too_wide, verdict
from ..meta import ADVISORY, MANDATORY, Config, Finding, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, as_bool, as_int, get
from .resource_types import (
    INSTANCE,
    LAUNCH_TEMPLATE,
    NODE_TYPES,
    SCALING_CONFIGURATION,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
)

ADMIN_PORTS = (22, 3389)


def check_metadata_tokens(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    tokens, endpoint = get(props, "httpTokens"), get(props, "httpEndpoint")
    if tokens is UNKNOWN or tokens == "required" or endpoint == "disabled":
        return
    shown = "not set (normal mode: tokens optional)" if tokens is None else repr(tokens)
    yield f"metadata tokens are not required (http_tokens is {shown}): set http_tokens = 'required'"


def check_scaling_configuration_metadata(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    endpoint = get(props, "httpEndpoint")
    if endpoint is UNKNOWN or endpoint == "disabled":
        return
    yield (
        "instances of this scaling configuration answer metadata requests without a token: "
        "ess.ScalingConfiguration has no http_tokens setting (pulumi-alicloud 4.0.0 offers only "
        "http_endpoint), and a launch template, which has http_tokens = 'required', cannot create ERIs "
        "(no network interface traffic mode). Residual gap: use a launch template for groups without "
        "eRDMA; for eRDMA groups keep the node's RAM role least-privilege, or set http_endpoint = "
        "'disabled' where nothing on the node reads metadata"
    )


def port_span(port_range: Any) -> tuple[int, int] | None:
    """'22/22' -> (22, 22); '-1/-1' -> (-1, -1); None when unreadable."""
    if not isinstance(port_range, str) or "/" not in port_range:
        return None
    low, _, high = port_range.partition("/")
    first, last = as_int(low), as_int(high)
    return (first, last) if first is not None and last is not None else None


def _exposed(protocol: Any, port_range: Any) -> str | None:
    """What an accept rule open to the internet exposes: 'all ports', 'port 22'... or None."""
    if not isinstance(protocol, str):
        return None
    proto = protocol.lower()
    if proto == "all":
        return "all ports"
    if proto not in ("tcp", "udp"):
        return None
    ports = port_span(port_range if port_range is not None else "-1/-1")
    if ports is None:
        return None
    low, high = ports
    if low <= 1 and high >= 65535 or (low, high) == (-1, -1):
        return "all ports"
    hit = [str(port) for port in ADMIN_PORTS if low <= port <= high]
    return f"port {' and '.join(hit)}" if hit else None


def openings(props: Props, urn: str) -> list[Opening]:
    """The admin opening one accept ingress rule declares, if it opens admin ports to an address range."""
    if get(props, "type") != "ingress" or get(props, "policy") == "drop":
        return []
    nets = tuple(net for value in (get(props, "cidrIp"), get(props, "ipv6CidrIp")) if (net := parse_range(value)))
    exposed = _exposed(get(props, "ipProtocol"), get(props, "portRange"))
    return [Opening(urn, "the rule", exposed, tuple(map(str, nets)), nets)] if exposed and nets else []


HINT = "allow only network.admin_cidrs (or use Cloud Assistant / a bastion) instead"


def check_public_admin_ingress(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    # Judged by the public space the ranges cover (gpufleet/stackfile/address_ranges.py), not by their spelling.
    found = openings(props, "")
    wide = verdict(found)
    if wide:
        yield f"{described(found)}: {wide}: {HINT}"


def check_admin_ingress_per_group(stack: Stack, config: Config) -> Iterator[Finding]:
    # One rule resource per admin CIDR: only the rules of a group together say what the group opens.
    by_group: dict[str, list[Opening]] = {}
    for node in stack.of_type(SECURITY_GROUP_RULE):
        by_group.setdefault(group_of(node, "securityGroupId"), []).extend(openings(node.props, node.urn))
    yield from groups_too_wide(stack, by_group, HINT)


def check_no_public_ip(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    bandwidth = as_int(get(props, "internetMaxBandwidthOut"))
    if bandwidth is not None and bandwidth > 0:
        yield (
            f"internet_max_bandwidth_out is {bandwidth}, which gives each node a public IP: set it to 0; GPU "
            "nodes reach the internet through the NAT gateway"
        )
    if resource_type == INSTANCE and as_bool(get(props, "allocatePublicIp")) is True:
        yield "allocate_public_ip is True: remove it; GPU nodes live in private vSwitches with NAT"


RULES: list[Rule] = [
    resource_rule(
        "alicloud-metadata-tokens-required",
        "Launch templates and instances require metadata tokens (http_tokens = required, hardened mode).",
        MANDATORY,
        "alicloud",
        [LAUNCH_TEMPLATE, INSTANCE],
        check_metadata_tokens,
    ),
    resource_rule(
        "alicloud-scaling-configuration-metadata-tokens",
        "Scaling configurations cannot require metadata tokens: the residual gap is named where the endpoint "
        "stays enabled.",
        ADVISORY,
        "alicloud",
        [SCALING_CONFIGURATION],
        check_scaling_configuration_metadata,
    ),
    resource_rule(
        "alicloud-no-public-admin-ingress",
        "No security group rule opens SSH (22), RDP (3389) or all ports to public address space wider than a "
        "/24 (IPv4) or /64 (IPv6).",
        MANDATORY,
        "alicloud",
        [SECURITY_GROUP_RULE],
        check_public_admin_ingress,
        checkov=("CKV_ALI_2", "CKV_ALI_3"),
    ),
    stack_rule(
        "alicloud-admin-ingress-per-group",
        "The ingress rules of one security group together open SSH (22), RDP (3389) or all ports to no more public "
        "address space than a /24 (IPv4) or /64 (IPv6).",
        MANDATORY,
        "alicloud",
        [SECURITY_GROUP, SECURITY_GROUP_RULE],
        check_admin_ingress_per_group,
    ),
    resource_rule(
        "alicloud-no-public-ip",
        "GPU nodes get no public IP (internet_max_bandwidth_out 0).",
        MANDATORY,
        "alicloud",
        list(NODE_TYPES),
        check_no_public_ip,
    ),
]
