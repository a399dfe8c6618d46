"""The budget covers the worst case: every group at size.max on its most expensive type, finite numbers only, and
the organisation can require a budget and refuse stack prices below the catalog's."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import read_cluster, write_stack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from organisation_files import organisation_file
from test_depth import examples
from typer.testing import CliRunner

from gpufleet.catalog import load_catalog
from gpufleet.cli import app
from gpufleet.plan.planner import plan_stack

QUICK = settings(max_examples=examples(12, 4), deadline=None, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
REGION = "us-east-1"


def on_demand(name: str) -> float:
    return load_catalog().get("aws", name).price(REGION).on_demand  # type: ignore[union-attr]


def budget_violations(result: Any) -> list[str]:
    return [v["message"] for v in result.policies["violations"] if v["policy"] == "hourly-budget"]


GROUPS = [("aws-train-p5", ["p4d.24xlarge", "p5.48xlarge"]), ("aws-infer-g6e", ["g5.48xlarge", "g6e.48xlarge"]),
          ("aws-train-p5", ["p5.48xlarge", "p4d.24xlarge"])]


@given(st.sampled_from(GROUPS), st.floats(min_value=1, max_value=2000))
@QUICK
def test_a_group_is_priced_at_its_most_expensive_type(tmp_path: Path, group: tuple[str, list[str]],
                                                      budget: float) -> None:
    base, types = group
    cluster = copy.deepcopy(read_cluster(base))
    cluster["node_groups"][0]["instance_types"] = types
    cluster["budget"]["max_hourly_usd"] = budget
    result = plan_stack(write_stack(tmp_path, "fallback", cluster))
    worst = cluster["node_groups"][0]["size"]["max"] * max(on_demand(t) for t in types)
    assert result.summary["hourly_usd"]["max_on_demand"] == pytest.approx(worst, abs=1e-3)
    messages = budget_violations(result)
    assert bool(messages) == (worst > budget)
    if messages:
        assert f"the most expensive of {', '.join(types)}" in messages[0]


@pytest.mark.parametrize("number", [".inf", "-.inf", ".nan", ".Inf"])
@pytest.mark.parametrize("field", ["budget", "price", "other"])
def test_a_non_finite_number_anywhere_in_a_stack_is_refused(stacks_dir: Path, number: str, field: str) -> None:
    body = {
        "budget": "    budget: {max_hourly_usd: %s}\n",
        "price": "    prices: {p5.48xlarge: {on_demand: %s, source: quote}}\n",
        "other": "    network: {extra: %s}\n",
    }[field] % number
    (stacks_dir / "Pulumi.inf.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:cluster:\n    extends: aws-train-p5\n" + body)
    for command in (["plan", "--format", "json"], ["policy-config"]):
        result = CliRunner().invoke(app, [*command, "--stack", "inf", "--stacks-dir", str(stacks_dir)])
        assert result.exit_code == 2, result.output
        assert "is not a finite number" in result.stderr
        assert "Infinity" not in result.stdout and "NaN" not in result.stdout


def test_organisation_requires_a_budget(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-infer-g6e"))
    cluster["budget"] = {"max_hourly_usd": None}
    path = write_stack(tmp_path, "nobudget", cluster)
    assert budget_violations(plan_stack(path)) == []  # the pack's default: a budget is the stack's choice
    with organisation_file(tmp_path, "settings:\n  hourly-budget: {budgetRequired: true}\n"):
        result = plan_stack(path)
    assert result.exit_code == 1
    (message,) = budget_violations(result)
    assert message.startswith("the organisation requires a budget")


@given(st.floats(min_value=0.01, max_value=55.03))
@QUICK
def test_organisation_refuses_stack_prices_below_the_catalogs(tmp_path: Path, price: float) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["prices"] = {"p5.48xlarge": {"on_demand": price, "source": "a quote"}}
    path = write_stack(tmp_path, "cheap", cluster)
    plain = plan_stack(path)
    (shown,) = plain.summary["stack_priced"]
    assert shown.endswith(f"; catalog {on_demand('p5.48xlarge'):g} USD/h")  # beside the catalog's, in every output
    with organisation_file(tmp_path, "settings:\n  hourly-budget: {pricesAtLeastCatalog: true}\n"):
        result = plan_stack(path)
    assert result.exit_code == 1
    assert any("below the catalog's 55.04" in m for m in budget_violations(result))
    assert json.loads(json.dumps(result.to_json()))["summary"]["stack_priced"] == [shown]
