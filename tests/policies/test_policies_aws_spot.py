"""AWS scaling-group and spot rules: pinned template versions and the spot allocation strategy.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

from typing import Any

from aws_rule_args import ASG, FLEET, validate


def test_floating_template_versions_are_reported():
    props = {"launchTemplate": {"id": "lt-1", "version": "$Latest"}}
    (message,) = validate("aws-launch-template-version-pinned", ASG, props)
    assert "launch_template.version is $Latest" in message and "latest_version" in message
    (message,) = validate("aws-launch-template-version-pinned", ASG, {"launchTemplate": {"id": "lt-1"}})
    assert "not set ($Default)" in message
    fleet = {
        "launchTemplateConfigs": [
            {"launchTemplateSpecification": {"launchTemplateId": "lt-1", "version": "$Default"}}
        ]
    }
    (message,) = validate("aws-launch-template-version-pinned", FLEET, fleet)
    assert message.startswith("launch_template_configs[0].launch_template_specification.version is $Default")


def test_explicit_template_version_passes():
    props = {
        "mixedInstancesPolicy": {
            "launchTemplate": {
                "launchTemplateSpecification": {"launchTemplateId": "lt-1", "version": "3"},
                "overrides": [{"instanceType": "p5.48xlarge"}],
            }
        }
    }
    assert validate("aws-launch-template-version-pinned", ASG, props) == []


def spot_asg(strategy: str | None) -> dict[str, Any]:
    distribution: dict[str, Any] = {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 0}
    if strategy:
        distribution["spotAllocationStrategy"] = strategy
    return {"mixedInstancesPolicy": {"instancesDistribution": distribution}}


def test_spot_allocation_strategy():
    (message,) = validate("aws-spot-allocation-strategy", ASG, spot_asg("lowest-price"))
    assert "'price-capacity-optimized'" in message
    (message,) = validate("aws-spot-allocation-strategy", ASG, spot_asg(None))
    assert "not set (lowest-price)" in message
    assert validate("aws-spot-allocation-strategy", ASG, spot_asg("price-capacity-optimized")) == []
    assert validate("aws-spot-allocation-strategy", ASG, {"launchTemplate": {"id": "lt-1"}}) == []
