"""The node network security group: nothing from the internet; SSH only from the admin CIDRs the stack lists.

Azure's default rules already allow traffic inside the VNet and deny the rest inbound; the explicit deny
below states it in the resource itself, so a reader (or a policy) sees it without knowing the defaults.
InfiniBand does not pass through the NSG: it is its own network.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_azure_native import network

ADMIN_PRIORITY = 100
DENY_INTERNET_PRIORITY = 4096  # the lowest precedence a user rule may have


def node_security_group(
    name: str, admin_cidrs: list[str], common: dict[str, Any], opts: pulumi.ResourceOptions
) -> network.NetworkSecurityGroup:
    rules = [
        network.SecurityRuleArgs(
            name=f"ssh-admin-{index}",
            description="SSH from an admin network",
            priority=ADMIN_PRIORITY + index,
            direction="Inbound",
            access="Allow",
            protocol="Tcp",
            source_address_prefix=cidr,
            source_port_range="*",
            destination_address_prefix="VirtualNetwork",
            destination_port_range="22",
        )
        for index, cidr in enumerate(admin_cidrs)
    ]
    rules.append(
        network.SecurityRuleArgs(
            name="deny-internet-inbound",
            description="nothing from the internet reaches the nodes",
            priority=DENY_INTERNET_PRIORITY,
            direction="Inbound",
            access="Deny",
            protocol="*",
            source_address_prefix="Internet",
            source_port_range="*",
            destination_address_prefix="*",
            destination_port_range="*",
        )
    )
    return network.NetworkSecurityGroup(f"{name}-nodes", security_rules=rules, **common, opts=opts)
