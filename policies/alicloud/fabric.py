"""Alibaba Cloud eRDMA rules: an eRDMA group stays in one zone, and its security group lets its members
reach each other on all protocols (ERIs use their ENI's security-group rules).

A scaling configuration is an eRDMA one when any of its network interfaces has traffic mode
HighPerformance (an ERI). Its scaling group is the one its `scalingGroupId` depends on; zones come from
the vSwitches the group depends on; security groups from those the configuration depends on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..meta import MANDATORY, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, get, items
from .resource_types import (
    ERI_TRAFFIC_MODE,
    SCALING_CONFIGURATION,
    SCALING_GROUP,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
    VSWITCH,
)


def is_eri_configuration(node: Node) -> bool:
    interfaces = items(node.props, "networkInterfaces")
    return isinstance(interfaces, list) and any(
        get(interface, "networkInterfaceTrafficMode") == ERI_TRAFFIC_MODE for interface in interfaces
    )


def _eri_configurations(stack: Stack) -> list[Node]:
    return [node for node in stack.of_type(SCALING_CONFIGURATION) if is_eri_configuration(node)]


def _vswitch_ids(group: Node) -> list[Any] | None:
    listed = items(group.props, "vswitchIds")
    if listed is UNKNOWN:
        return None
    single = get(group.props, "vswitchId")
    return list(listed) if isinstance(listed, list) and listed else [single] if single else []


def check_erdma_one_zone(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for configuration in _eri_configurations(stack):
        for group in stack.dependencies_of(configuration, SCALING_GROUP, prop="scalingGroupId"):
            switches = stack.dependencies_of(group, VSWITCH, prop="vswitchIds")
            zones = sorted({z for s in switches if isinstance(z := get(s.props, "zoneId"), str)})
            listed = _vswitch_ids(group)
            if len(zones) > 1:
                yield group.urn, (
                    f"eRDMA group spans zones {', '.join(zones)}: eRDMA traffic stays in one zone; give the "
                    "scaling group the vSwitch of one zone (node_groups[].zone)"
                )
            elif not switches and listed is not None and len(listed) > 1:
                yield group.urn, (
                    f"eRDMA group lists {len(listed)} brought vSwitches, whose zones cannot be checked: list the "
                    "one vSwitch of the group's zone"
                )


def _is_self_rule(rule: Node, group: Node) -> bool:
    props = rule.props
    if get(props, "type") != "ingress" or get(props, "policy") == "drop":
        return False
    if str(get(props, "ipProtocol")).lower() != "all":
        return False
    deps = rule.property_dependencies
    by_dependency = deps.get("securityGroupId") == deps.get("sourceSecurityGroupId") == frozenset({group.urn})
    source, target = get(props, "sourceSecurityGroupId"), get(props, "securityGroupId")
    by_value = isinstance(source, str) and source == target
    return by_dependency or by_value


def check_erdma_self_rule(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    rules = stack.of_type(SECURITY_GROUP_RULE)
    for configuration in _eri_configurations(stack):
        for group in stack.dependencies_of(configuration, SECURITY_GROUP):
            if not any(_is_self_rule(rule, group) for rule in rules):
                yield group.urn, (
                    "the security group of an eRDMA group has no ingress rule from itself on all protocols: "
                    "add an ecs.SecurityGroupRule(type='ingress', ip_protocol='all', port_range='-1/-1', "
                    "source_security_group_id=<this group>) so the ERIs of its members reach each other"
                )


RULES: list[Rule] = [
    stack_rule(
        "alicloud-erdma-one-zone",
        "Scaling groups whose configuration creates ERIs (eRDMA) use vSwitches of one zone.",
        MANDATORY,
        "alicloud",
        [SCALING_CONFIGURATION, SCALING_GROUP, VSWITCH],
        check_erdma_one_zone,
    ),
    stack_rule(
        "alicloud-erdma-security-group-self-rule",
        "Security groups of eRDMA scaling configurations accept all protocols from themselves.",
        MANDATORY,
        "alicloud",
        [SCALING_CONFIGURATION, SECURITY_GROUP, SECURITY_GROUP_RULE],
        check_erdma_self_rule,
    ),
]
