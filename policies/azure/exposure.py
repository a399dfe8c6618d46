"""Azure exposure rules: no public IP on node NICs, no inbound from the internet to SSH, RDP or all ports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.address_ranges import parse_range

from ..admin_openings import Opening, described, group_of, groups_too_wide, verdict
from ..meta import MANDATORY, Config, Finding, Props, Rule, Stack, config_schema, resource_rule, stack_rule
from ..props import UNKNOWN, get, items
from .resource_types import NIC, NSG, SECURITY_RULE, VM_PROFILE, VMSS

# NSG sources that are not address ranges are tags. Only two stand for private space (Virtual network service tags,
# learn.microsoft.com/azure/virtual-network/service-tags-overview): VirtualNetwork (the virtual network's address
# space, its peered networks and on-premises space connected by VPN or ExpressRoute) and AzureLoadBalancer (the
# platform's health probe address, 168.63.129.16). Every other tag is public space: Internet, `*` and Any, and the
# service tags (AzureCloud, AzureCloud.westeurope, Storage...) that cover Azure's public addresses.
PRIVATE_TAGS = frozenset({"virtualnetwork", "azureloadbalancer"})
# Service tags a stack's own managed services need inbound, derived from its spec (gpufleet/pack_config/derive.py),
# never set by the stack or the organisation: Azure Managed Lustre's subnet admits AzureMonitor on any TCP port
# (configure-network-security-group.md, inbound rule 112).
ALLOWED_SERVICE_TAGS = "allowedServiceTags"
SCHEMA = config_schema({ALLOWED_SERVICE_TAGS: {
    "type": "array", "items": {"type": "string"}, "default": [],
    "description": "service tags an admin inbound rule may come from besides private ranges (derived from the spec)"}})
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


def _opening(urn: str, where: str, rule: Any, allowed: frozenset[str]) -> list[Opening]:
    """One inbound allow rule as an Opening when it opens admin or all ports to a range or a public tag (`allowed`:
    the service tags the stack's own services need, lower case)."""
    if rule is UNKNOWN or not isinstance(rule, dict):
        return []
    if str(get(rule, "direction")).lower() != "inbound" or str(get(rule, "access")).lower() != "allow":
        return []
    exposed = _exposed(_list(get(rule, "destinationPortRange")) + _list(get(rule, "destinationPortRanges")))
    sources = [s for s in _list(get(rule, "sourceAddressPrefix")) + _list(get(rule, "sourceAddressPrefixes"))
               if s is not UNKNOWN]
    nets = tuple(net for s in sources if (net := parse_range(s)) is not None)
    tags = tuple(str(s).strip() or repr(s) for s in sources
                 if parse_range(s) is None and str(s).strip().lower() not in PRIVATE_TAGS | allowed)
    if not exposed or not (nets or tags):
        return []
    return [Opening(urn, where, exposed, tuple(str(s) for s in sources), nets, tags)]


def openings(resource_type: str, props: Props, urn: str, config: Config) -> list[Opening]:
    """The admin openings of an NSG's inline rules, or of one security rule resource."""
    allowed = frozenset(str(tag).strip().lower() for tag in config.get(ALLOWED_SERVICE_TAGS) or [])
    if resource_type == SECURITY_RULE:
        return _opening(urn, "the rule", props, allowed)
    rules = items(props, "securityRules")
    return [found for index, rule in enumerate(rules if isinstance(rules, list) else [])
            for found in _opening(urn, f"security_rules[{index}] ({get(rule, 'name') or 'unnamed'})", rule, allowed)]


HINT = "allow only network.admin_cidrs (or use Bastion)"
PHRASE = "allows {exposed} inbound from"


def check_no_internet_admin_inbound(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    # The rules of one NSG together (two of a /24 each open two /24s), and a tag by what it stands for.
    found = openings(resource_type, props, "", config)
    wide = verdict(found)
    if wide:
        together = "together " if len(found) > 1 else ""
        yield f"{described(found, phrase=PHRASE)}: {together}{wide}: {HINT}"


def check_admin_inbound_per_group(stack: Stack, config: Config) -> Iterator[Finding]:
    by_group: dict[str, list[Opening]] = {}
    for node in stack.of_type(NSG, SECURITY_RULE):
        group = node.urn if node.type == NSG else group_of(node, "networkSecurityGroupName", "resourceGroupName")
        by_group.setdefault(group, []).extend(openings(node.type, node.props, node.urn, config))
    yield from groups_too_wide(stack, by_group, HINT, PHRASE)


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
        "No network security group allows inbound SSH (22), RDP (3389) or all ports from public space: ranges wider "
        "together than a /24 (IPv4) or /64 (IPv6), Internet, * or a service tag (only VirtualNetwork and "
        "AzureLoadBalancer are private).",
        MANDATORY, "azure", [NSG, SECURITY_RULE], check_no_internet_admin_inbound,
        checkov=("CKV_AZURE_9", "CKV_AZURE_10"), schema=SCHEMA,
    ),
    stack_rule(
        "azure-admin-inbound-per-group",
        "The inbound rules of one network security group (inline and separate rule resources) together allow SSH "
        "(22), RDP (3389) or all ports from no more public address space than a /24 (IPv4) or /64 (IPv6), and from "
        "no tag but VirtualNetwork and AzureLoadBalancer.",
        MANDATORY, "azure", [NSG, SECURITY_RULE], check_admin_inbound_per_group, schema=SCHEMA,
    ),
    resource_rule(
        "azure-no-public-ip",
        "Node NICs (scale-set NIC configurations and network interfaces) get no public IP address.",
        MANDATORY, "azure", [VMSS, NIC], check_no_public_ip,
    ),
]
