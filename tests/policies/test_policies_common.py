"""Common rules (tags, allowed instance types, hourly budget, image lock) over recorded stacks of any cloud."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

import pytest
from stack_rule_args import ASG, FLEET, LT, SG, messages, res, run, urn

from gpufleet.plan.record import RecordedResource


def test_required_tags():
    config = {"keys": ["team", "cost-center"]}
    stack = [
        res(SG, "sg", {"tags": {"team": "ml"}}),
        res(
            ASG,
            "g",
            {
                "tags": [
                    {"key": "team", "value": "ml", "propagateAtLaunch": True},
                    {"key": "cost-center", "value": "4410", "propagateAtLaunch": True},
                ]
            },
        ),
        res("aws:iam/rolePolicy:RolePolicy", "p", {"policy": "{}"}),
    ]
    ((where, message),) = messages("required-tags", stack, config)
    assert where == urn(SG, "sg") and message.startswith("missing required tags cost-center")


def test_required_tags_not_configured_is_not_applicable():
    report = run("required-tags", [res(SG, "sg", {"tags": {}})])
    assert report.violations == [] and report.not_applicable == [
        ("required-tags", "no required tag keys configured (keys)")
    ]


def test_allowed_instance_types_across_readers():
    config = {"types": ["p5.48xlarge"]}
    stack = [
        res(LT, "lt", {"instanceType": "g6e.48xlarge"}),
        res(
            ASG,
            "g",
            {
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "overrides": [{"instanceType": "p5.48xlarge"}, {"instanceType": "p5e.48xlarge"}]
                    }
                }
            },
        ),
        res(FLEET, "f", {"launchTemplateConfigs": [{"overrides": [{"instanceType": "p5.48xlarge"}]}]}),
        res(
            "azure-native:compute:VirtualMachineScaleSet",
            "vmss",
            {"sku": {"name": "Standard_ND96isr_H100_v5"}},
        ),
    ]
    found = dict(messages("allowed-instance-types", stack, config))
    assert set(found) == {
        urn(LT, "lt"),
        urn(ASG, "g"),
        urn("azure-native:compute:VirtualMachineScaleSet", "vmss"),
    }
    assert found[urn(ASG, "g")].startswith(
        "instance types p5e.48xlarge are not allowed here: use one of p5.48xlarge"
    )


def test_allowed_instance_types_pass():
    stack = [res(LT, "lt", {"instanceType": "p5.48xlarge"})]
    assert messages("allowed-instance-types", stack, {"types": ["p5.48xlarge"]}) == []


def budget_stack(max_size: int) -> list[RecordedResource]:
    template = res(LT, "lt", {"instanceType": "p5.48xlarge"})
    return [
        template,
        res(
            ASG,
            "g",
            {"maxSize": max_size, "launchTemplate": {"id": "lt-id", "version": "1"}},
            depends_on=(template.urn,),
        ),
    ]


def test_budget_over_fails():
    config = {"maxHourlyUsd": 500, "region": "us-east-1"}
    ((where, message),) = messages("hourly-budget", budget_stack(16), config)
    assert where == ""
    assert message.startswith("hourly cost at max size is 880.64 USD (16 x p5.48xlarge at 55.04 = 880.64)")
    assert "over the budget of 500.00 USD" in message


def test_budget_within_passes_and_fleet_counts():
    config = {"maxHourlyUsd": 500, "region": "us-east-1"}
    assert messages("hourly-budget", budget_stack(8), config) == []
    fleet = res(
        FLEET,
        "f",
        {
            "targetCapacitySpecification": {"totalTargetCapacity": 2},
            "launchTemplateConfigs": [{"overrides": [{"instanceType": "p5.48xlarge"}]}],
        },
    )
    ((_, message),) = messages("hourly-budget", [*budget_stack(8), fleet], config)
    assert message.startswith("hourly cost at max size is 550.40 USD")


@dataclass
class Problem:
    profile: str
    field: str
    message: str


@pytest.fixture
def lock(monkeypatch):
    module = types.ModuleType("gpufleet.lock")
    state: dict[str, Any] = {"problems": [], "calls": []}

    class LockError(Exception):
        pass

    def check_lock(lock, on, required_regions=None, profile=None):
        state["calls"].append({"profile": profile, "required_regions": required_regions})
        return state["problems"]

    module.load_lock = lambda path=None: object()
    module.check_lock = check_lock
    module.LockError = LockError
    monkeypatch.setitem(sys.modules, "gpufleet.lock", module)
    return state


def test_image_lock_problems_are_reported(lock):
    lock["problems"] = [
        Problem("cuda12.8-r570", "fabric_manager", "570.86.15 differs from driver 570.133.20")
    ]
    config = {"profile": "cuda12.8-r570", "requiredRegions": {"aws": ["us-east-1"]}}
    ((where, message),) = messages("image-lock-valid", [], config)
    assert message.startswith("image profile 'cuda12.8-r570', fabric_manager: 570.86.15 differs from driver")
    assert lock["calls"] == [{"profile": "cuda12.8-r570", "required_regions": {"aws": {"us-east-1"}}}]


def test_clean_image_lock_passes(lock):
    assert messages("image-lock-valid", [], {"profile": "cuda12.8-r570"}) == []
    assert lock["calls"][0]["profile"] == "cuda12.8-r570"
