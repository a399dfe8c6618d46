"""Azure exposure rules: internet inbound to admin ports, and public IPs on node NICs."""

from __future__ import annotations

import pytest
from azure_rule_args import VMSS, scale_set, validate

NSG = "azure-native:network:NetworkSecurityGroup"
RULE = "azure-native:network:SecurityRule"
NIC = "azure-native:network:NetworkInterface"


def inbound(source: str, ports: str, **extra: object) -> dict:
    return {"name": "r", "direction": "Inbound", "access": "Allow", "protocol": "Tcp", "priority": 100,
            "sourceAddressPrefix": source, "destinationPortRange": ports, **extra}


@pytest.mark.parametrize(("source", "ports", "exposed"), [
    ("*", "22", "port 22"), ("Internet", "3389", "port 3389"), ("0.0.0.0/0", "*", "all ports"),
    ("*", "20-25", "port 22"),
])
def test_internet_inbound_to_admin_ports_fails(source: str, ports: str, exposed: str) -> None:
    (message,) = validate("azure-no-internet-admin-inbound", NSG, {"securityRules": [inbound(source, ports)]})
    assert f"allows {exposed} inbound from {source}" in message and "public" in message


def test_admin_cidr_deny_rules_and_https_pass() -> None:
    rules = [inbound("10.20.0.0/16", "22"), inbound("*", "22", access="Deny"), inbound("*", "443")]
    assert validate("azure-no-internet-admin-inbound", NSG, {"securityRules": rules}) == []
    assert validate("azure-no-internet-admin-inbound", RULE, inbound("*", "443")) == []
    assert validate("azure-no-internet-admin-inbound", RULE, inbound("*", "22"))


def test_public_ip_configuration_on_node_nic_fails() -> None:
    path = "virtualMachineProfile.networkProfile.networkInterfaceConfigurations.0.ipConfigurations.0"
    bad = scale_set(**{path: {"name": "ip", "publicIPAddressConfiguration": {"name": "pip"}}})
    (message,) = validate("azure-no-public-ip", VMSS, bad)
    assert "public_ip_address_configuration" in message
    assert validate("azure-no-public-ip", VMSS, scale_set()) == []
    assert validate("azure-no-public-ip", NIC, {"ipConfigurations": [{"publicIPAddress": {"id": "p"}}]})
    assert validate("azure-no-public-ip", NIC, {"ipConfigurations": [{"subnet": {"id": "s"}}]}) == []
