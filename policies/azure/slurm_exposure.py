"""slurmctld is reachable from inside the cluster only: the security groups on the head node's NICs admit slurmctld's
port from application security groups (the cluster nodes'), never from an address prefix or a service tag.

Whoever reaches slurmctld with a valid munge credential submits and cancels jobs; an address prefix (*, Internet,
VirtualNetwork, the subnet's range) admits every machine in it, not the cluster's nodes. A public IP on the head
node's NIC is azure-no-public-ip's finding (every NIC); the node subnet's own security group denies the internet
(components/clouds/azure/security.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, get, items
from .resource_types import NIC, NSG, SECURITY_RULE, VM
from .slurm_head import head_nodes

# slurm.conf.5 (22.05) SlurmctldPort: 6817 by default, the port gpufleet's slurm.conf sets (components/slurm/site.py).
SLURMCTLD_PORT = 6817
FIX = ("admit slurmctld's port only from the cluster nodes' application security group "
       "(source_application_security_groups), never from an address prefix or a service tag")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else ([] if value in (None, UNKNOWN) else [value])


def _covers_slurmctld(rule: Any) -> bool:
    if str(get(rule, "direction")).lower() != "inbound" or str(get(rule, "access")).lower() != "allow":
        return False
    if str(get(rule, "protocol")).lower() not in ("tcp", "*"):
        return False
    for raw in _list(get(rule, "destinationPortRange")) + _list(get(rule, "destinationPortRanges")):
        text = str(raw).strip()
        low, _, high = text.partition("-")
        if text == "*" or (low.isdigit() and int(low) <= SLURMCTLD_PORT <= int(high if high.isdigit() else low)):
            return True
    return False


def _prefixes(rule: Any) -> list[str]:
    return [str(s) for s in _list(get(rule, "sourceAddressPrefix")) + _list(get(rule, "sourceAddressPrefixes"))
            if s is not UNKNOWN]


def _openings(group: Node, stack: Stack) -> Iterator[Finding]:
    rules = items(group.props, "securityRules")
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        if rule is not UNKNOWN and _covers_slurmctld(rule) and _prefixes(rule):
            yield group.urn, (f"security_rules[{index}] ({get(rule, 'name') or 'unnamed'}) of the head node's "
                              f"security group admits slurmctld's port {SLURMCTLD_PORT} from "
                              f"{', '.join(_prefixes(rule))}: {FIX}")
    for rule in stack.dependents_of(group, SECURITY_RULE):
        if _covers_slurmctld(rule.props) and _prefixes(rule.props):
            yield rule.urn, (f"the rule admits slurmctld's port {SLURMCTLD_PORT} on the head node's security group "
                             f"from {', '.join(_prefixes(rule.props))}: {FIX}")


def check_slurmctld_private(stack: Stack, config: Config) -> Iterator[Finding]:
    for head in head_nodes(stack):
        for nic in stack.dependencies_of(head, NIC, prop="networkProfile"):
            for group in stack.dependencies_of(nic, NSG, prop="networkSecurityGroup"):
                yield from _openings(group, stack)


RULES: list[Rule] = [
    stack_rule(
        "azure-slurmctld-not-public",
        "The security groups on the Slurm head node's NICs admit slurmctld (6817) only from application security "
        "groups, never from an address prefix or a service tag.",
        MANDATORY,
        "azure",
        [VM, NIC, NSG, SECURITY_RULE],
        check_slurmctld_private,
    ),
]
