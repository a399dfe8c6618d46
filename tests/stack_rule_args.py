"""Run stack rules over hand-made recorded resources (shared by the stack-rule tests)."""

from __future__ import annotations

from typing import Any

from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from policies.registry import RULES_BY_NAME

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
FLEET = "aws:ec2/fleet:Fleet"
SG = "aws:ec2/securityGroup:SecurityGroup"
PG = "aws:ec2/placementGroup:PlacementGroup"


def urn(resource_type: str, name: str) -> str:
    return f"urn:pulumi:dev::gpufleet::{resource_type}::{name}"


def res(
    resource_type: str,
    name: str,
    inputs: dict[str, Any],
    depends_on: tuple[str, ...] = (),
    property_dependencies: dict[str, tuple[str, ...]] | None = None,
) -> RecordedResource:
    return RecordedResource(
        urn=urn(resource_type, name),
        type=resource_type,
        name=name,
        parent=None,
        depends_on=depends_on,
        inputs=inputs,
        custom=True,
        property_dependencies=property_dependencies or {},
    )


def run(rule: str, resources: list[RecordedResource], config: dict[str, Any] | None = None):
    settings = {rule: config} if config else {}
    return run_policies(resources, settings, [RULES_BY_NAME[rule].policy])


def messages(rule: str, resources: list[RecordedResource], config: dict[str, Any] | None = None):
    return [(v.urn, v.message) for v in run(rule, resources, config).violations]
