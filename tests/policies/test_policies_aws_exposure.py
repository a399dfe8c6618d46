"""AWS exposure rules: IMDSv2, admin ingress from the internet, public IPs, security groups on interfaces.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

import pytest
from aws_rule_args import INSTANCE, LT, efa_interfaces, validate
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE


@pytest.mark.parametrize(
    ("resource_type", "block", "arg"),
    [
        (LT, "metadataOptions", "metadata_options"),
        (INSTANCE, "metadataOptions", "metadata_options"),
        (
            "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration",
            "instanceMetadataOptions",
            "instance_metadata_options",
        ),
    ],
)
def test_imdsv2(resource_type, block, arg):
    (message,) = validate("aws-imdsv2-required", resource_type, {block: {"httpTokens": "optional"}})
    assert f"set {arg}.http_tokens = 'required'" in message
    (message,) = validate("aws-imdsv2-required", resource_type, {})
    assert "not set (defaults to 'optional')" in message
    assert validate("aws-imdsv2-required", resource_type, {block: {"httpTokens": "required"}}) == []


def test_imdsv2_unknown_value_is_not_a_violation():
    props = {"metadataOptions": {"httpTokens": UNKNOWN_STRING_VALUE}}
    assert validate("aws-imdsv2-required", LT, props) == []


def test_inline_ssh_from_internet_fails():
    props = {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/0"]}]}
    (message,) = validate("aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", props)
    assert message.startswith("ingress[0] opens port 22 to 0.0.0.0/0") and "admin_cidrs" in message


def test_inline_all_traffic_from_ipv6_internet_fails():
    props = {"ingress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]}]}
    (message,) = validate("aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", props)
    assert "opens all ports to ::/0" in message


def test_security_group_rule_rdp_fails_and_vpc_rule_all_fails():
    rule = {
        "type": "ingress",
        "protocol": "tcp",
        "fromPort": 3000,
        "toPort": 4000,
        "cidrBlocks": ["0.0.0.0/0"],
        "securityGroupId": "sg-1",
    }
    (message,) = validate("aws-no-public-admin-ingress", "aws:ec2/securityGroupRule:SecurityGroupRule", rule)
    assert "opens port 3389 to 0.0.0.0/0" in message
    vpc_rule = {"ipProtocol": "-1", "cidrIpv4": "0.0.0.0/0", "securityGroupId": "sg-1"}
    (message,) = validate(
        "aws-no-public-admin-ingress", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", vpc_rule
    )
    assert "opens all ports to 0.0.0.0/0" in message


def test_admin_ingress_passes_for_https_internal_ssh_and_egress():
    props = {
        "ingress": [
            {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
            {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8"]},
            {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True},
        ],
        "egress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}],
    }
    assert validate("aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", props) == []
    egress = {"type": "egress", "protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}
    assert (
        validate("aws-no-public-admin-ingress", "aws:ec2/securityGroupRule:SecurityGroupRule", egress) == []
    )


def test_public_ip_on_gpu_launch_template_fails_private_passes():
    props = {"networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "true"}]}
    (message,) = validate("aws-no-public-ip", LT, props)
    assert "network_interfaces[0] asks for a public IP" in message
    props = {"networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "false"}]}
    assert validate("aws-no-public-ip", LT, props) == []
    several = {"networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "true"}, {"deviceIndex": 1}]}
    (message,) = validate("aws-no-public-ip", LT, several)
    assert "leave associate_public_ip_address unset" in message  # EC2 refuses the field with several interfaces
    (message,) = validate("aws-no-public-ip", INSTANCE, {"associatePublicIpAddress": True})
    assert "associate_public_ip_address = False" in message


def test_security_groups_at_template_level_beside_interfaces_fail():
    props = {"vpcSecurityGroupIds": ["sg-1"], "networkInterfaces": efa_interfaces(1)}
    (message,) = validate("aws-launch-template-sg-on-interfaces", LT, props)
    assert "vpc_security_group_ids is set beside network_interfaces" in message
    assert (
        validate("aws-launch-template-sg-on-interfaces", LT, {"networkInterfaces": efa_interfaces(1)}) == []
    )
    assert validate("aws-launch-template-sg-on-interfaces", LT, {"vpcSecurityGroupIds": ["sg-1"]}) == []
