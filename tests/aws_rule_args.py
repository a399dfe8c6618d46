"""Run one AWS resource rule through the SDK's own ResourceValidationArgs (shared by the AWS rule tests)."""

from __future__ import annotations

import json
from typing import Any

from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs
from pulumi_policy.proxy import unknown_checking_proxy

from policies.registry import RULES_BY_NAME

LT = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
FLEET = "aws:ec2/fleet:Fleet"
GOOD_AMI = "ami-0123456789abcdef0"
CMK = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def validate(
    rule: str, resource_type: str, props: dict[str, Any], config: dict[str, Any] | None = None
) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(json.loads(json.dumps(props))),
        f"urn:pulumi:dev::gpufleet::{resource_type}::r",
        "r",
        PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None),
        None,
        config or {},
    )
    RULES_BY_NAME[rule].policy.validate(args, lambda message, urn=None: found.append(message))
    return found


def efa_interfaces(count: int, cards: list[int] | None = None) -> list[dict[str, Any]]:
    cards = cards if cards is not None else list(range(count))
    return [
        {
            "interfaceType": "efa",
            "networkCardIndex": card,
            "deviceIndex": 0 if card == 0 else 1,
            "securityGroups": ["sg-1"],
        }
        for card in cards
    ]
