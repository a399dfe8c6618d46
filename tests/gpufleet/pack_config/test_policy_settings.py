"""A stack cannot argue with the gate: its `gpufleet:policy` settings only tighten what the organisation file and
its own spec give, and the organisation's settings and floors hold however the stack writes the rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED_STACKS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from organisation_files import organisation_file
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.pack_config import floor as policy_floor
from gpufleet.pack_config.derive import policy_pack_config
from gpufleet.pack_config.tighten import TIGHTER
from gpufleet.prepare import prepare
from gpufleet.stackfile import POLICY_KEY, SpecInvalid, load_stack, stack_path
from policies.registry import RULES

QUICK = settings(max_examples=40, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])
P5 = load_stack(stack_path(SHIPPED_STACKS, "aws-train-p5"), SHIPPED_STACKS)  # budget 900 USD/h, 16 x p5
PREPARED = prepare(P5)
DERIVED = policy_pack_config(P5, PREPARED, "aws-train-p5")


def with_policy(policy: Any) -> dict[str, Any]:
    return {**copy.deepcopy(P5), POLICY_KEY: policy}


def refused(policy: Any, field: str) -> str:
    with pytest.raises(SpecInvalid) as caught:
        policy_pack_config(with_policy(policy), PREPARED, "aws-train-p5")
    (error,) = caught.value.errors
    assert error.path == field
    return error.message


def test_every_setting_the_pack_takes_has_a_tightening_direction() -> None:
    taken = {(r.name, key) for r in RULES for key in (r.policy.config_schema.properties
                                                      if r.policy.config_schema else {})}
    assert taken == set(TIGHTER)


@given(st.floats(min_value=900.0001, max_value=1e15))
@QUICK
def test_a_budget_above_the_stacks_own_is_refused(budget: float) -> None:
    message = refused({"hourly-budget": {"maxHourlyUsd": budget}}, f"{POLICY_KEY}.hourly-budget.maxHourlyUsd")
    assert "a stack may only lower it" in message


@given(st.floats(min_value=0, max_value=900))
@QUICK
def test_a_lower_budget_tightens(budget: float) -> None:
    config = policy_pack_config(with_policy({"hourly-budget": {"maxHourlyUsd": budget}}), PREPARED, "aws-train-p5")
    assert config["hourly-budget"] == {**DERIVED["hourly-budget"], "maxHourlyUsd": budget}


derived_settings = st.sampled_from([
    ("hourly-budget", "nodeGroups"), ("hourly-budget", "region"), ("image-lock-valid", "profile"),
    ("aws-efa-interface-count-advisory", "rdmaInUseInstanceTypes"),
])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=6)


@given(derived_settings, json_values)
@QUICK
def test_a_setting_the_spec_derives_cannot_be_rewritten(target: tuple[str, str], value: Any) -> None:
    rule, key = target
    if value is None or value == DERIVED[rule][key]:
        return  # null keeps the derived value; the same value changes nothing
    with pytest.raises(SpecInvalid) as caught:
        policy_pack_config(with_policy({rule: {key: value}}), PREPARED, "aws-train-p5")
    assert [e.path for e in caught.value.errors] == [f"{POLICY_KEY}.{rule}.{key}"]


@given(st.lists(st.text(min_size=1, max_size=10), max_size=4))
@QUICK
def test_organisation_tag_keys_stay_required_whatever_the_stack_lists(tmp_path: Path, keys: list[str]) -> None:
    with organisation_file(tmp_path, "settings:\n  required-tags: {keys: [cost-center, team]}\n"):
        config = policy_pack_config(with_policy({"required-tags": {"keys": keys}}), PREPARED, "aws-train-p5")
    assert set(config["required-tags"]["keys"]) == {"cost-center", "team", *keys}


@given(st.lists(st.sampled_from(["p5.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "x1"]), max_size=4))
@QUICK
def test_allowed_types_only_narrow(tmp_path: Path, types: list[str]) -> None:
    with organisation_file(tmp_path, "settings:\n  allowed-instance-types: {types: [p5.48xlarge, p4d.24xlarge]}\n"):
        policy = with_policy({"allowed-instance-types": {"types": types}})
        if types and set(types) <= {"p5.48xlarge", "p4d.24xlarge"}:
            assert policy_pack_config(policy, PREPARED, "aws-train-p5")["allowed-instance-types"] == {
                "types": sorted(set(types))}
        else:  # an empty list would allow every type; a type the organisation does not allow widens the list
            with pytest.raises(SpecInvalid, match="a stack may only narrow the list"):
                policy_pack_config(policy, PREPARED, "aws-train-p5")


@pytest.mark.parametrize("written", [None, {}, {"minimumDays": 400}, "mandatory", {"enforcementLevel": "mandatory"}])
def test_a_raised_floor_holds_however_the_stack_writes_the_rule(tmp_path: Path, written: Any) -> None:
    with organisation_file(tmp_path, "floors: {aws-log-retention: mandatory}\nsettings:\n"
                                     "  aws-log-retention: {minimumDays: 365}\n"):
        config = policy_pack_config(with_policy({"aws-log-retention": written}), PREPARED, "aws-train-p5")
        assert config["aws-log-retention"]["enforcementLevel"] == "mandatory"
        assert config["aws-log-retention"]["minimumDays"] >= 365
        message = refused({"aws-log-retention": {"minimumDays": 7}}, f"{POLICY_KEY}.aws-log-retention.minimumDays")
        assert "a stack may only raise it" in message


def test_organisation_can_require_a_budget_and_a_stack_cannot_switch_it_off(tmp_path: Path) -> None:
    with organisation_file(tmp_path, "settings:\n  hourly-budget: {budgetRequired: true}\n"):
        message = refused({"hourly-budget": {"budgetRequired": False}}, f"{POLICY_KEY}.hourly-budget.budgetRequired")
        assert "cannot be switched off" in message


def test_organisation_setting_of_a_derived_value_is_refused(tmp_path: Path) -> None:
    with organisation_file(tmp_path, "settings:\n  hourly-budget: {region: us-east-1}\n"), \
            pytest.raises(SpecInvalid) as caught:
        policy_floor.organisation()
    assert caught.value.source.endswith("organisation.yaml")


def test_policy_config_command_refuses_a_weakened_budget(stacks_dir: Path) -> None:
    (stacks_dir / "Pulumi.weak.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:policy: {hourly-budget: {maxHourlyUsd: 1.0e12}}\n"
        "  gpufleet:cluster: {extends: aws-train-p5}\n")
    for command in ("policy-config", "plan"):
        result = CliRunner().invoke(cli.app, [command, "--stack", "weak", "--stacks-dir", str(stacks_dir)])
        assert result.exit_code == 2, result.output
        assert "gpufleet:policy.hourly-budget.maxHourlyUsd" in result.stderr
        assert "a stack may only lower it" in result.stderr
    good = CliRunner().invoke(cli.app, ["policy-config", "--stack", "aws-train-p5", "--stacks-dir", str(stacks_dir)])
    assert json.loads(good.stdout)["hourly-budget"]["maxHourlyUsd"] == 900


@given(st.lists(st.text(alphabet="abcdefgh-", min_size=1, max_size=8), max_size=3),
       st.sampled_from([None, {}, "mandatory", {"keys": []}]))
@QUICK
def test_a_child_stack_only_tightens_the_policy_it_extends(stacks_dir: Path, keys: list[str], written: Any) -> None:
    (stacks_dir / "Pulumi.base.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:policy: {required-tags: {keys: [team, cost-center]}, "
        "hourly-budget: {maxHourlyUsd: 500}}\n  gpufleet:cluster: {extends: aws-train-p5}\n")
    entry = {"keys": keys} if written == {"keys": []} else written
    (stacks_dir / "Pulumi.kid.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:policy: " + json.dumps({"required-tags": entry})
        + "\n  gpufleet:cluster: {extends: base}\n")
    config = load_stack(stacks_dir / "Pulumi.kid.yaml", stacks_dir)
    pack = policy_pack_config(config, PREPARED, "kid")
    assert {"team", "cost-center"} <= set(pack["required-tags"]["keys"])
    assert pack["hourly-budget"]["maxHourlyUsd"] == 500
    (stacks_dir / "Pulumi.kid.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:policy: {hourly-budget: {maxHourlyUsd: 800}}\n"
        "  gpufleet:cluster: {extends: base}\n")
    with pytest.raises(SpecInvalid, match="a stack may only lower it"):
        load_stack(stacks_dir / "Pulumi.kid.yaml", stacks_dir)
