"""slurmctld is reachable from inside the cluster only: no elastic address is bound to the head node, and its
security groups admit slurmctld's port from security groups (the cluster nodes'), never from an address range.

Whoever reaches slurmctld with a valid munge credential submits and cancels jobs; an address range (0.0.0.0/0, the
VPC's CIDR, any other) admits every machine in it, not the cluster's nodes. The head node is reached by Cloud
Assistant / Workbench as the nodes are, so it needs no public address either; a public IP of its own (bandwidth out)
is alicloud-no-public-ip's finding on every instance.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, stack_rule
from ..props import get
from .exposure import port_span
from .resource_types import EIP_ASSOCIATION, INSTANCE, SECURITY_GROUP, SECURITY_GROUP_RULE
from .slurm_head import head_nodes

# slurm.conf.5 (22.05) SlurmctldPort: 6817 by default, the port gpufleet's slurm.conf sets (components/slurm/site.py).
SLURMCTLD_PORT = 6817
FIX = ("admit slurmctld's port only from the cluster nodes' security group (source_security_group_id), never from "
       "an address range")


def _covers_slurmctld(protocol: Any, port_range: Any) -> bool:
    if not isinstance(protocol, str) or protocol.lower() not in ("tcp", "all"):
        return False
    if protocol.lower() == "all":
        return True  # every protocol is every port, whatever the range says
    ports = port_span(port_range if port_range is not None else "-1/-1")
    return ports is not None and (ports == (-1, -1) or ports[0] <= SLURMCTLD_PORT <= ports[1])


def _ranges(rule: Node) -> list[str]:
    if get(rule.props, "type") != "ingress" or get(rule.props, "policy") == "drop":
        return []
    if not _covers_slurmctld(get(rule.props, "ipProtocol"), get(rule.props, "portRange")):
        return []
    return [value for key in ("cidrIp", "ipv6CidrIp") if isinstance(value := get(rule.props, key), str) and value]


def check_slurmctld_private(stack: Stack, config: Config) -> Iterator[Finding]:
    for head in head_nodes(stack):
        for association in stack.dependents_of(head, EIP_ASSOCIATION):
            yield head.urn, (f"elastic IP association {association.name} gives the head node a public address: "
                             "remove it (it is reached by Cloud Assistant / Workbench)")
        for group in stack.dependencies_of(head, SECURITY_GROUP, prop="securityGroups"):
            for rule in stack.dependents_of(group, SECURITY_GROUP_RULE):
                if group.urn not in rule.property_dependencies.get("securityGroupId", frozenset({group.urn})):
                    continue  # a rule that only names the group as its source
                ranges = _ranges(rule)
                if ranges:
                    yield rule.urn, (f"the rule admits slurmctld's port {SLURMCTLD_PORT} on the head node's "
                                     f"security group from {', '.join(ranges)}: {FIX}")


RULES: list[Rule] = [
    stack_rule(
        "alicloud-slurmctld-not-public",
        "No elastic address is bound to the Slurm head node, and its security groups admit slurmctld (6817) only "
        "from security groups, never from an address range.",
        MANDATORY,
        "alicloud",
        [INSTANCE, EIP_ASSOCIATION, SECURITY_GROUP, SECURITY_GROUP_RULE],
        check_slurmctld_private,
    ),
]
