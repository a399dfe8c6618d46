"""Azure exposure rules: no public IP on node NICs, no inbound from the internet to SSH, RDP or all ports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.address_ranges import parse_range, too_wide

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, get, items
from .resource_types import NIC, NSG, SECURITY_RULE, VM_PROFILE, VMSS

# NSG source tags that mean "anywhere"; address prefixes are judged by what they cover
# (gpufleet/stackfile/address_ranges.py), so 0.0.0.0/1 + 128.0.0.0/1 in one rule is the internet too.
INTERNET = ("*", "internet", "any")
ADMIN_PORTS = (22, 3389)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else ([] if value in (None, UNKNOWN) else [value])


def _exposed(ranges: list[Any]) -> str | None:
    """What destination port ranges ('22', '20-25', '*') expose of the admin ports or all ports."""
    hit: set[int] = set()
    for raw in ranges:
        text = str(raw).strip()
        if text == "*" or text == "0-65535":
            return "all ports"
        low, _, high = text.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            continue
        if first <= 1 and last >= 65535:
            return "all ports"
        hit |= {port for port in ADMIN_PORTS if first <= port <= last}
    return f"port {' and '.join(str(p) for p in sorted(hit))}" if hit else None


def _rule_problem(where: str, rule: Any) -> str | None:
    """The message for one inbound allow rule open to the internet on admin or all ports, else None."""
    if rule is UNKNOWN or not isinstance(rule, dict):
        return None
    if str(get(rule, "direction")).lower() != "inbound" or str(get(rule, "access")).lower() != "allow":
        return None
    sources = _list(get(rule, "sourceAddressPrefix")) + _list(get(rule, "sourceAddressPrefixes"))
    tagged = any(isinstance(s, str) and s.strip().lower() in INTERNET for s in sources)
    if not tagged and too_wide([net for s in sources if (net := parse_range(s)) is not None]) is None:
        return None
    exposed = _exposed(_list(get(rule, "destinationPortRange")) + _list(get(rule, "destinationPortRanges")))
    if exposed is None:
        return None
    return f"{where} allows {exposed} inbound from the internet: allow only network.admin_cidrs (or use Bastion)"


def check_no_internet_admin_inbound(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == SECURITY_RULE:
        found = _rule_problem("the rule", props)
        if found:
            yield found
        return
    rules = items(props, "securityRules")
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        found = _rule_problem(f"security_rules[{index}] ({get(rule, 'name') or 'unnamed'})", rule)
        if found:
            yield found


def check_no_public_ip(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == NIC:
        configs = items(props, "ipConfigurations")
        for index, ip in enumerate(configs if isinstance(configs, list) else []):
            if get(ip, "publicIPAddress") not in (None, UNKNOWN):
                yield f"ip_configurations[{index}] attaches a public IP: nodes reach out through the NAT gateway"
        return
    nics = items(props, VM_PROFILE, "networkProfile", "networkInterfaceConfigurations")
    for n, nic in enumerate(nics if isinstance(nics, list) else []):
        configs = items(nic, "ipConfigurations")
        for index, ip in enumerate(configs if isinstance(configs, list) else []):
            if get(ip, "publicIPAddressConfiguration") not in (None, UNKNOWN):
                yield (
                    f"network_interface_configurations[{n}].ip_configurations[{index}] gives every node a public "
                    "IP (public_ip_address_configuration): remove it; nodes reach out through the NAT gateway"
                )


RULES: list[Rule] = [
    resource_rule(
        "azure-no-internet-admin-inbound",
        "No network security group rule allows inbound SSH (22), RDP (3389) or all ports from the internet.",
        MANDATORY, "azure", [NSG, SECURITY_RULE], check_no_internet_admin_inbound,
        checkov=("CKV_AZURE_9", "CKV_AZURE_10"),
    ),
    resource_rule(
        "azure-no-public-ip",
        "Node NICs (scale-set NIC configurations and network interfaces) get no public IP address.",
        MANDATORY, "azure", [VMSS, NIC], check_no_public_ip,
    ),
]
