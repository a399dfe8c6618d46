"""Alibaba Cloud exposure rules: metadata tokens, internet ingress to 22/3389/all, public IPs."""

from __future__ import annotations

import pytest
from alicloud_rule_args import INSTANCE, LT, SC, SG_RULE, validate

TOKENS = "alicloud-metadata-tokens-required"
INGRESS = "alicloud-no-public-admin-ingress"
PUBLIC_IP = "alicloud-no-public-ip"


def test_launch_template_without_tokens_fails_and_required_passes():
    (message,) = validate(TOKENS, LT, {})
    assert message.startswith("metadata tokens are not required (http_tokens is not set")
    (message,) = validate(TOKENS, INSTANCE, {"httpTokens": "optional"})
    assert "http_tokens is 'optional'" in message
    assert validate(TOKENS, LT, {"httpTokens": "required"}) == []
    assert validate(TOKENS, INSTANCE, {"httpEndpoint": "disabled"}) == []


def test_scaling_configuration_states_the_residual_gap_unless_the_endpoint_is_off():
    (message,) = validate("alicloud-scaling-configuration-metadata-tokens", SC, {"httpEndpoint": "enabled"})
    assert "ess.ScalingConfiguration has no http_tokens setting" in message and "Residual gap" in message
    assert validate("alicloud-scaling-configuration-metadata-tokens", SC, {"httpEndpoint": "disabled"}) == []


def rule(protocol: str, ports: str, cidr: str = "0.0.0.0/0", **extra: str) -> dict:
    return {"type": "ingress", "ipProtocol": protocol, "portRange": ports, "cidrIp": cidr, **extra}


@pytest.mark.parametrize(
    ("props", "exposed"),
    [
        (rule("tcp", "22/22"), "port 22"),
        (rule("tcp", "3000/3500"), "port 3389"),
        (rule("all", "-1/-1"), "all ports"),
        (rule("tcp", "1/65535"), "all ports"),
        ({"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22", "ipv6CidrIp": "::/0"}, "port 22"),
    ],
)
def test_internet_ingress_to_admin_ports_fails(props: dict, exposed: str):
    (message,) = validate(INGRESS, SG_RULE, props)
    assert message.startswith(f"the rule opens {exposed} to ")


@pytest.mark.parametrize(
    "props",
    [
        rule("tcp", "22/22", "10.0.0.0/8"),
        rule("tcp", "443/443"),
        rule("tcp", "22/22", policy="drop"),
        {"type": "ingress", "ipProtocol": "all", "portRange": "-1/-1", "sourceSecurityGroupId": "sg-1"},
        {**rule("all", "-1/-1"), "type": "egress"},
    ],
)
def test_other_rules_pass(props: dict):
    assert validate(INGRESS, SG_RULE, props) == []


def test_public_bandwidth_fails_and_zero_passes():
    (message,) = validate(PUBLIC_IP, SC, {"internetMaxBandwidthOut": 10})
    assert message.startswith("internet_max_bandwidth_out is 10, which gives each node a public IP")
    (message,) = validate(PUBLIC_IP, INSTANCE, {"allocatePublicIp": True})
    assert "allocate_public_ip" in message
    assert validate(PUBLIC_IP, SC, {"internetMaxBandwidthOut": 0}) == []
    assert validate(PUBLIC_IP, LT, {}) == []
