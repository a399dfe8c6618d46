"""Every input the program registers is one the installed provider SDK declares for that resource type (a plan
of every shipped stack and of a 32-character name variant has no unknown input). The SDK's Args
class is the authority: its properties carry the engine's camelCase names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sdk_inputs import NO_SCHEMA, declared_inputs, unknown_inputs
from test_names import LONG, long_named, plan_config

from gpufleet.plan.planner import PlanResult


def test_every_shipped_plan_registers_only_inputs_the_sdk_declares(shipped_plans: dict[str, PlanResult]) -> None:
    checked = 0
    for stack, plan in shipped_plans.items():
        assert unknown_inputs(plan) == [], stack
        checked += sum(1 for r in plan.resources if not r.type.startswith(NO_SCHEMA))
    assert checked > 100  # the check read real resources, not an empty plan


@pytest.mark.parametrize("stack", ["aws-train-p5", "azure-train-ndh100", "alicloud-train-ebmgn8v"])
def test_a_32_character_name_variant_registers_only_declared_inputs(tmp_path: Path, stack: str) -> None:
    config: dict[str, Any] = long_named(stack)
    plan = plan_config(tmp_path, LONG, config)
    assert plan.resources and unknown_inputs(plan) == []


def test_an_undeclared_input_is_found() -> None:
    # The judgement itself: a misspelt input of a real type is reported.
    assert "cidrBlock" in declared_inputs("aws:ec2/vpc:Vpc")
    assert "cidr_block" not in declared_inputs("aws:ec2/vpc:Vpc")
