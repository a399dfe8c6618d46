"""One budget: the hourly-budget rule and the plan summary price the same groups at max size."""

from __future__ import annotations

import copy
from pathlib import Path

from conftest import read_cluster, write_stack

from components.plan.planner import plan_stack


def fleet_cluster(max_size: int, budget: float) -> dict:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    group = cluster["node_groups"][0]
    group["provisioner"] = "fleet"
    group["size"] = {"min": 0, "desired": 2, "max": max_size}
    cluster["budget"]["max_hourly_usd"] = budget
    return cluster


def budget_violations(result) -> list[dict]:
    return [v for v in result.policies["violations"] if v["policy"] == "hourly-budget"]


def test_fleet_group_at_max_over_budget_fails_mandatory(tmp_path: Path) -> None:
    result = plan_stack(write_stack(tmp_path, "fleet", fleet_cluster(16, 500)))
    (violation,) = budget_violations(result)
    assert violation["level"] == "mandatory" and result.exit_code == 1
    assert violation["message"].startswith("hourly cost at max size is 880.64 USD (16 x p5.48xlarge at 55.04")
    assert result.summary["hourly_usd"]["max_on_demand"] == 880.64


def test_fleet_group_within_budget_passes(tmp_path: Path) -> None:
    result = plan_stack(write_stack(tmp_path, "fleet", fleet_cluster(8, 500)))
    assert budget_violations(result) == []
    assert result.summary["hourly_usd"]["max_on_demand"] == 440.32
