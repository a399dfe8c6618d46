"""Azure Spot groups get their evicted capacity back: with eviction Delete an evicted VM leaves the count and
`pulumi up` ignores capacity, so a Spot group without `idle` has Spot Try & Restore and no autoscale setting
("Try & restore is disabled in scale sets that use Autoscale", virtual-machine-scale-sets/use-spot.md). With
`idle` autoscale stays (it owns the scale-in) and restoring is the scheduler's or operator's scale-out."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure_plans import AUTOSCALE, INFER, TRAIN, VMSS, one, plan_variant, shipped, variant

RESTORE = {"enabled": True, "restoreTimeout": "PT1H"}


@pytest.mark.parametrize(("stack", "group"), [
    (INFER, {"idle": None}),  # a Flexible Spot serving group
    (TRAIN, {"capacity": "spot"}),  # a Uniform InfiniBand Spot training group
])
def test_a_spot_group_without_idle_is_restored_by_azure_and_has_no_autoscale(
        tmp_path: Path, stack: str, group: dict) -> None:
    plan = plan_variant(tmp_path, variant(stack, group=group))
    assert plan.exit_code == 0, plan.policies["violations"]
    scale_set = one(plan, VMSS)
    assert scale_set.inputs["virtualMachineProfile"]["priority"] == "Spot"
    assert scale_set.inputs["virtualMachineProfile"]["evictionPolicy"] == "Delete"
    assert scale_set.inputs["spotRestorePolicy"] == RESTORE
    assert not [r for r in plan.resources if r.type == AUTOSCALE]


def test_a_spot_group_with_idle_keeps_its_autoscale_scale_in_and_no_restore() -> None:
    plan = shipped(INFER)
    assert "spotRestorePolicy" not in one(plan, VMSS).inputs
    (profile,) = one(plan, AUTOSCALE).inputs["profiles"]
    assert [rule["scaleAction"]["direction"] for rule in profile["rules"]] == ["Decrease"]


def test_a_regular_group_keeps_its_autoscale_bounds_and_no_restore() -> None:
    plan = shipped(TRAIN)
    assert "spotRestorePolicy" not in one(plan, VMSS).inputs
    (profile,) = one(plan, AUTOSCALE).inputs["profiles"]
    assert profile["capacity"]["maximum"] == str(variant(TRAIN)["node_groups"][0]["size"]["max"])
