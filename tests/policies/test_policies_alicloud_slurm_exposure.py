"""alicloud-slurmctld-not-public over what the program registers for the shipped ebmgn8v stack turned slurm, as it
is and with the head node's exposure changed."""

from __future__ import annotations

import pytest
from alicloud_slurm_plans import HEAD, INSTANCE, RULE, changed, named, slurm_resources
from stack_rule_args import messages, res

POLICY = "alicloud-slurmctld-not-public"
FIX = ("admit slurmctld's port only from the cluster nodes' security group (source_security_group_id), never from an "
       "address range")


def test_what_the_program_registers_passes() -> None:
    assert messages(POLICY, list(slurm_resources())) == []


@pytest.mark.parametrize(("protocol", "ports", "cidr"), [
    ("tcp", "6817/6817", "10.0.0.0/8"), ("all", "-1/-1", "0.0.0.0/0"), ("tcp", "1/65535", "192.168.0.0/16")])
def test_slurmctld_from_an_address_range_fails(protocol: str, ports: str, cidr: str) -> None:
    rule = named(slurm_resources(), RULE, f"{HEAD}-in-slurmctld")
    resources = changed(slurm_resources(), rule, ipProtocol=protocol, portRange=ports, cidrIp=cidr,
                        sourceSecurityGroupId=None)
    assert messages(POLICY, resources) == [
        (rule.urn, f"the rule admits slurmctld's port 6817 on the head node's security group from {cidr}: {FIX}")]


def test_ssh_from_an_admin_range_and_the_nodes_slurmd_rule_pass() -> None:
    # The nodes' group admitting slurmd from the head's names the head's group as its source only.
    rule = named(slurm_resources(), RULE, f"{HEAD}-nodes-in-slurmd")
    resources = changed(slurm_resources(), rule, portRange="6817/6817", cidrIp="10.0.0.0/8")
    assert messages(POLICY, resources) == []


def test_an_elastic_address_on_the_head_fails() -> None:
    head = named(slurm_resources(), INSTANCE, HEAD)
    association = res("alicloud:ecs/eipAssociation:EipAssociation", "head-ip",
                      {"allocationId": "eip-1", "instanceId": "i-1"}, depends_on=(head.urn,),
                      property_dependencies={"instanceId": (head.urn,)})
    assert messages(POLICY, [*slurm_resources(), association]) == [
        (head.urn, "elastic IP association head-ip gives the head node a public address: remove it (it is reached "
                   "by Cloud Assistant / Workbench)")]
