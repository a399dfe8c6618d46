"""A stack's own prices (`prices:` in gpufleet:cluster): they price the summary and the budget, labelled as
the stack's; a budgeted stack with a type nobody priced fails the budget rule instead of passing silently."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conftest import read_cluster, write_stack
from typer.testing import CliRunner

from gpufleet.catalog import load_catalog
from gpufleet.cli import app
from gpufleet.plan.planner import plan_stack
from gpufleet.plan.policy_runner import run_policies
from policies.registry import RULES_BY_NAME

NEGOTIATED = "enterprise agreement 2025-06, rate card line 14"


def p5e_cluster(budget: float, prices: dict | None = None) -> dict:
    """aws-train-p5 on p5e.48xlarge in us-west-2, which the catalog lists there without an on-demand price (and
    as not offered in the template's us-east-1)."""
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster.update(region="us-west-2", network={**cluster["network"], "zones": ["us-west-2a"]})
    cluster["node_groups"][0]["instance_types"] = ["p5e.48xlarge"]
    cluster["budget"]["max_hourly_usd"] = budget
    if prices is not None:
        cluster["prices"] = prices
    return cluster


def budget_messages(result) -> list[str]:
    return [v["message"] for v in result.policies["violations"] if v["policy"] == "hourly-budget"]


def test_catalog_has_no_on_demand_price_for_p5e() -> None:
    row = load_catalog().get("aws", "p5e.48xlarge")
    assert row is not None and (row.price("us-east-1") is None or row.price("us-east-1").on_demand is None)


def test_budgeted_stack_with_an_unpriced_type_fails_naming_the_type_and_how_to_price_it(tmp_path: Path) -> None:
    result = plan_stack(write_stack(tmp_path, "unpriced", p5e_cluster(900)))
    assert result.exit_code == 1
    (message,) = budget_messages(result)
    assert message.startswith("no price for p5e.48xlarge in us-west-2 (node group h100)")
    assert "budget of 900.00 USD cannot be checked" in message
    assert "gpufleet:cluster prices: {p5e.48xlarge: {on_demand:" in message
    assert result.summary["unpriced"] == ["p5e.48xlarge in us-west-2"]


def test_stack_price_prices_an_uncatalogued_type_and_is_labelled(tmp_path: Path) -> None:
    prices = {"p5e.48xlarge": {"on_demand": 50.0, "spot": 20.0, "source": NEGOTIATED}}
    result = plan_stack(write_stack(tmp_path, "priced", p5e_cluster(900, prices)))
    assert budget_messages(result) == [] and result.exit_code == 0
    # desired 2 with on_demand_base 1 on spot: 1 on-demand + 1 spot; max 16 on-demand.
    hourly = result.summary["hourly_usd"]
    assert hourly == {"desired_on_demand": 100.0, "desired_expected": 70.0, "max_on_demand": 800.0}
    assert result.summary["stack_priced"] == [
        f"h100: p5e.48xlarge priced by the stack at 50 USD/h ({NEGOTIATED}); no catalog price in us-west-2"
    ]
    assert "unpriced" not in result.summary


def test_stack_price_over_budget_names_the_stack_source(tmp_path: Path) -> None:
    prices = {"p5e.48xlarge": {"on_demand": 60.0, "source": NEGOTIATED}}
    (message,) = budget_messages(plan_stack(write_stack(tmp_path, "over", p5e_cluster(900, prices))))
    assert message.startswith(
        f"hourly cost at max size is 960.00 USD (16 x p5e.48xlarge at 60.00 (stack price: {NEGOTIATED}) = 960.00)"
    )


def test_stack_price_wins_over_the_catalog_snapshot(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["prices"] = {"p5.48xlarge": {"on_demand": 40.0, "source": NEGOTIATED}}
    result = plan_stack(write_stack(tmp_path, "rate", cluster))
    assert result.summary["hourly_usd"]["max_on_demand"] == 640.0  # not the catalog's 880.64
    assert result.summary["stack_priced"] == [
        f"h100: p5.48xlarge priced by the stack at 40 USD/h ({NEGOTIATED}); catalog 55.04 USD/h"
    ]


def test_policy_config_carries_the_stack_price(tmp_path: Path) -> None:
    prices = {"p5e.48xlarge": {"on_demand": 50.0, "source": NEGOTIATED}}
    write_stack(tmp_path, "cfg", p5e_cluster(900, prices))
    result = CliRunner().invoke(app, ["policy-config", "--stack", "cfg", "--stacks-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (group,) = json.loads(result.stdout)["hourly-budget"]["nodeGroups"]
    assert group["prices"] == {"p5e.48xlarge": {"onDemand": 50.0, "spot": None, "source": NEGOTIATED}}


def test_spot_price_above_on_demand_exits_2_naming_the_field(tmp_path: Path) -> None:
    prices = {"p5e.48xlarge": {"on_demand": 50.0, "spot": 70.0, "source": NEGOTIATED}}
    path = write_stack(tmp_path, "bad", p5e_cluster(900, prices))
    result = CliRunner().invoke(app, ["plan", "--stack-file", str(path)])
    assert result.exit_code == 2
    assert "prices.p5e.48xlarge" in result.stderr and "spot (70.0) is above on_demand (50.0)" in result.stderr


def run_budget(config: dict) -> list[str]:
    report = run_policies([], {"hourly-budget": config}, [RULES_BY_NAME["hourly-budget"].policy])
    return [v.message for v in report.violations]


def test_rule_fails_an_alibaba_group_without_a_price_and_passes_it_with_the_stacks() -> None:
    group = {"name": "h20", "cloud": "alicloud", "instanceTypes": ["ecs.ebmgn8v.48xlarge"], "maxSize": 4}
    config = {"maxHourlyUsd": 200, "region": "cn-wulanchabu", "nodeGroups": [group]}
    (message,) = run_budget(config)
    assert message.startswith("no price for ecs.ebmgn8v.48xlarge in cn-wulanchabu (node group h20)")
    priced = {**group, "prices": {"ecs.ebmgn8v.48xlarge": {"onDemand": 30.0, "spot": None, "source": NEGOTIATED}}}
    assert run_budget({**config, "nodeGroups": [priced]}) == []


def test_malformed_price_in_config_is_named() -> None:
    group = {"cloud": "aws", "instanceTypes": ["p5e.48xlarge"], "maxSize": 4,
             "prices": {"p5e.48xlarge": {"onDemand": -1, "source": "x"}}}
    (message,) = run_budget({"maxHourlyUsd": 200, "region": "us-east-1", "nodeGroups": [group]})
    assert message.startswith("hourly-budget config nodeGroups[0] must each give cloud, instanceTypes (primary first)")
