"""One budget: the hourly-budget rule and the plan summary price the same groups at max size."""

from __future__ import annotations

import copy
from pathlib import Path

from conftest import read_cluster, write_stack

from gpufleet.catalog import Price, hourly_cost, load_catalog
from gpufleet.plan.planner import plan_stack
from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from policies.registry import RULES_BY_NAME


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


def test_rule_and_summary_agree_on_every_group(tmp_path: Path) -> None:
    cluster = fleet_cluster(4, 100)
    second = {**copy.deepcopy(cluster["node_groups"][0]), "name": "spare", "provisioner": "autoscaling"}
    cluster["node_groups"].append(second)
    result = plan_stack(write_stack(tmp_path, "two", cluster))
    (violation,) = budget_violations(result)
    total = result.summary["hourly_usd"]["max_on_demand"]
    assert total == 440.32  # 2 groups x 4 x 55.04
    assert violation["message"].startswith(f"hourly cost at max size is {total:.2f} USD")


FLEET = "aws:ec2/fleet:Fleet"


def fleet_resource(target: int) -> RecordedResource:
    return RecordedResource(
        urn=f"urn:pulumi:dev::gpufleet::{FLEET}::f",
        type=FLEET,
        name="f",
        parent=None,
        depends_on=(),
        inputs={
            "targetCapacitySpecification": {"totalTargetCapacity": target},
            "launchTemplateConfigs": [{"overrides": [{"instanceType": "p5.48xlarge"}]}],
        },
        custom=True,
    )


def budget_messages(resources: list[RecordedResource], config: dict) -> list[str]:
    report = run_policies(resources, {"hourly-budget": config}, [RULES_BY_NAME["hourly-budget"].policy])
    return [v.message for v in report.violations]


def test_configured_sizes_at_max_win_over_a_fleets_target_capacity() -> None:
    config = {"maxHourlyUsd": 500, "region": "us-east-1"}
    assert budget_messages([fleet_resource(2)], config) == []  # only what the resource shows: 2 nodes
    groups = [{"name": "h100", "cloud": "aws", "instanceTypes": ["p5.48xlarge"], "maxSize": 16}]
    (message,) = budget_messages([fleet_resource(2)], {**config, "nodeGroups": groups})
    assert message.startswith("hourly cost at max size is 880.64 USD (16 x p5.48xlarge at 55.04 = 880.64)")


def test_node_group_sizes_arrive_as_whole_floats_under_the_cli() -> None:
    """The CLI hands the pack its config as a protobuf Struct, whose numbers are doubles: maxSize 16 reads 16.0."""
    config = {"maxHourlyUsd": 500.0, "region": "us-east-1"}
    groups = [{"name": "h100", "cloud": "aws", "instanceTypes": ["p5.48xlarge"], "maxSize": 16.0}]
    (message,) = budget_messages([fleet_resource(2)], {**config, "nodeGroups": groups})
    assert message.startswith("hourly cost at max size is 880.64 USD (16 x p5.48xlarge at 55.04 = 880.64)")
    (message,) = budget_messages([], {**config, "nodeGroups": [{**groups[0], "maxSize": 16.5}]})
    assert message.startswith("hourly-budget config nodeGroups[0] must each give cloud, instanceTypes (primary first)")


def test_malformed_node_groups_config_is_named() -> None:
    groups = [{"cloud": "aws", "instanceTypes": ["p5.48xlarge"], "maxSize": 16}, {"cloud": "aws", "maxSize": -1}]
    config = {"maxHourlyUsd": 500, "region": "us-east-1", "nodeGroups": groups}
    (message,) = budget_messages([], config)
    assert message.startswith("hourly-budget config nodeGroups[1] must each give cloud, instanceTypes (primary first)")


def test_hourly_cost_prices_spot_nodes_where_published_and_never_invents_a_price() -> None:
    row = load_catalog().get("aws", "p5.48xlarge")
    assert row is not None

    def priced(on_demand: float | None, spot: float | None):
        price = Price(on_demand=on_demand, spot=spot, source="test figure", date="2025-01")
        return row.model_copy(update={"prices": {"r": price}})

    assert hourly_cost(priced(10.0, 3.0), "r", 4, spot_count=3) == 1 * 10.0 + 3 * 3.0
    assert hourly_cost(priced(10.0, None), "r", 4, spot_count=3) == 40.0  # no spot price: capped at on-demand
    assert hourly_cost(priced(None, 3.0), "r", 4) is None
    assert hourly_cost(priced(10.0, 3.0), "elsewhere", 4) is None
