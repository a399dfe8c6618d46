"""azure-slurmctld-not-public over the head node's NIC and its security group."""

from __future__ import annotations

from azure_slurm_resources import NSG, head_network, slurmctld_rule
from stack_rule_args import messages, res

RULE = "azure-slurmctld-not-public"


def test_slurmctld_from_the_nodes_application_security_group_passes() -> None:
    assert messages(RULE, head_network(slurmctld_rule())) == []


def test_slurmctld_from_an_address_prefix_or_tag_fails() -> None:
    for source in ("VirtualNetwork", "10.42.0.0/17", "*", "Internet"):
        rule = slurmctld_rule(sourceAddressPrefix=source, sourceApplicationSecurityGroups=None)
        ((where, message),) = messages(RULE, head_network(rule))
        assert where.endswith(f"{NSG}::train-dev-slurm-head")
        assert f"admits slurmctld's port 6817 from {source}" in message


def test_a_range_or_all_ports_covering_slurmctld_fails_and_other_ports_pass() -> None:
    for ports, expected in (("6000-7000", 1), ("*", 1), ("6818", 0), ("60001-63000", 0)):
        rule = slurmctld_rule(destinationPortRange=ports, sourceAddressPrefix="VirtualNetwork")
        assert len(messages(RULE, head_network(rule))) == expected, ports


def test_a_security_group_of_no_head_node_is_not_judged() -> None:
    nsg = res(NSG, "other", {"securityRules": [slurmctld_rule(sourceAddressPrefix="*")]})
    assert messages(RULE, [nsg]) == []
