"""aws-slurmctld-not-public over hand-made resources: the head node without a public address, and slurmctld's port
admitted from security groups only."""

from __future__ import annotations

import pytest
from slurm_resources import head_group, head_node
from stack_rule_args import SG, messages, res, urn

RULE = "aws-slurmctld-not-public"
HEAD = urn("aws:ec2/instance:Instance", "train-dev-slurm-head")
FROM_NODES = {"protocol": "tcp", "fromPort": 6817, "toPort": 6817, "securityGroups": ["sg-nodes"]}


def test_the_contract_passes() -> None:
    rule = res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "from-nodes", {
        "securityGroupId": "sg-head", "referencedSecurityGroupId": "sg-nodes", "ipProtocol": "tcp",
        "fromPort": 6817, "toPort": 6817}, depends_on=(urn(SG, "train-dev-slurm-head"),),
        property_dependencies={"securityGroupId": (urn(SG, "train-dev-slurm-head"),)})
    assert messages(RULE, [head_node(), head_group(ingress=[FROM_NODES]), rule]) == []


def test_a_public_ip_fails() -> None:
    found = messages(RULE, [head_node(associatePublicIpAddress=True), head_group()])
    assert found == [(HEAD, "the head node gets a public IP: set associate_public_ip_address = False (it is "
                            "reached by SSM)")]


def test_a_subnet_that_maps_public_ips_fails_where_the_instance_does_not_refuse_one() -> None:
    subnet = res("aws:ec2/subnet:Subnet", "train-net-public-us-east-1a", {"mapPublicIpOnLaunch": True})
    head = head_node(associatePublicIpAddress=None, subnetId="subnet-1", dependencies={"subnetId": (subnet.urn,)})
    ((where, message),) = messages(RULE, [head, head_group(), subnet])
    assert (where, message.split(":")[0]) == (
        HEAD, "the head node sits in subnet train-net-public-us-east-1a, which maps a public IP on launch")


def test_an_elastic_ip_fails() -> None:
    eip = res("aws:ec2/eip:Eip", "head-ip", {"instance": "i-1", "domain": "vpc"}, depends_on=(HEAD,),
              property_dependencies={"instance": (HEAD,)})
    assert messages(RULE, [head_node(), head_group(), eip]) == [
        (HEAD, "elastic IP head-ip gives the head node a public address: remove it (it is reached by SSM)")]


@pytest.mark.parametrize(("opening", "sources"), [
    ({"protocol": "tcp", "fromPort": 6817, "toPort": 6818, "cidrBlocks": ["10.42.0.0/16"]}, "10.42.0.0/16"),
    ({"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]}, "::/0"),
    ({"protocol": "tcp", "fromPort": 0, "toPort": 65535, "cidrBlocks": ["0.0.0.0/0"]}, "0.0.0.0/0"),
    ({"protocol": "6", "fromPort": 6000, "toPort": 7000, "prefixListIds": ["pl-1"]}, "pl-1"),
])
def test_inline_ingress_to_slurmctld_from_a_range_fails(opening: dict, sources: str) -> None:
    ((where, message),) = messages(RULE, [head_node(), head_group(ingress=[FROM_NODES, opening])])
    assert where == urn(SG, "train-dev-slurm-head")
    assert message == (f"ingress[1] of the head node's security group admits slurmctld's port 6817 from {sources}: "
                       "admit slurmctld's port only from the cluster nodes' security group (source_security_group_id"
                       " / referenced_security_group_id), never from an address range")


def test_other_ports_and_udp_from_a_range_pass() -> None:
    ingress = [{"protocol": "tcp", "fromPort": 6818, "toPort": 6818, "cidrBlocks": ["10.0.0.0/8"]},
               {"protocol": "udp", "fromPort": 6817, "toPort": 6817, "cidrBlocks": ["10.0.0.0/8"]}]
    assert messages(RULE, [head_node(), head_group(ingress=ingress)]) == []


def test_rule_resources_from_a_range_fail() -> None:
    group = urn(SG, "train-dev-slurm-head")
    vpc_rule = res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "open", {
        "securityGroupId": "sg-head", "cidrIpv4": "0.0.0.0/0", "ipProtocol": "-1"}, depends_on=(group,),
        property_dependencies={"securityGroupId": (group,)})
    classic = res("aws:ec2/securityGroupRule:SecurityGroupRule", "vpc-wide", {
        "type": "ingress", "securityGroupId": "sg-head", "protocol": "tcp", "fromPort": 6817, "toPort": 6817,
        "cidrBlocks": ["10.42.0.0/16"]}, depends_on=(group,), property_dependencies={"securityGroupId": (group,)})
    found = messages(RULE, [head_node(), head_group(), vpc_rule, classic])
    assert sorted(found, reverse=True) == [
        (vpc_rule.urn, "the rule admits slurmctld's port 6817 on the head node's security group from 0.0.0.0/0: "
                       "admit slurmctld's port only from the cluster nodes' security group (source_security_group_id"
                       " / referenced_security_group_id), never from an address range"),
        (classic.urn, "the rule admits slurmctld's port 6817 on the head node's security group from 10.42.0.0/16: "
                      "admit slurmctld's port only from the cluster nodes' security group (source_security_group_id"
                      " / referenced_security_group_id), never from an address range"),
    ]


def test_a_range_on_a_group_the_head_node_lacks_is_not_this_rules() -> None:
    nodes = res(SG, "train-nodes", {"ingress": [{"protocol": "-1", "fromPort": 0, "toPort": 0,
                                                 "cidrBlocks": ["10.42.0.0/16"]}]})
    assert messages(RULE, [head_node(), head_group(), nodes]) == []
