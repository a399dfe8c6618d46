"""`gpufleet fork` is safe: the new name is checked first, nothing is left behind by a refused fork, `--set`
reaches dashed keys and reads values as YAML 1.2, and the template's guidance comments come along."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.stackfile.read import read_config


def fork(stacks_dir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, ["fork", *args, "--stacks-dir", str(stacks_dir)])
    return result.exit_code, result.output


def entries(stacks_dir: Path) -> set[str]:
    return {path.name for path in stacks_dir.iterdir()}


@pytest.mark.parametrize("new", ["../escape", "a/b", ".hidden", "", "x" * 101])
def test_a_bad_new_name_writes_nothing(stacks_dir: Path, new: str) -> None:
    before = entries(stacks_dir)
    code, output = fork(stacks_dir, "aws-train-p5", new)
    assert code == 2 and "NEW:" in output and "is not a stack name" in output
    assert entries(stacks_dir) == before and not (stacks_dir.parent / "escape.yaml").exists()


def test_a_refused_fork_leaves_no_file_and_no_staging_directory(stacks_dir: Path) -> None:
    before = entries(stacks_dir)
    code, output = fork(stacks_dir, "aws-train-p5", "bad", "--set", "node_groups[0].size.min=99")
    assert code == 2 and "node_groups[0].size" in output
    assert entries(stacks_dir) == before


def test_set_reaches_dashed_keys_and_reads_yaml_1_2(stacks_dir: Path) -> None:
    code, output = fork(stacks_dir, "aws-train-p5", "team-b", "--set", "tags.cost-center=ml-4411",
                        "--set", "tags.on-call=yes", "--set", "node_groups[0].size.max=32",
                        "--set", "budget.max_hourly_usd=1800")  # 32 x p5.48xlarge: within budget, so exit 0
    assert code == 0, output
    cluster = read_config(stacks_dir / "Pulumi.team-b.yaml")["gpufleet:cluster"]
    assert cluster["tags"] == {"cost-center": "ml-4411", "on-call": "yes"}
    assert cluster["node_groups"][0]["size"]["max"] == 32


@pytest.mark.parametrize(("value", "message"), [
    ("!!python/object/apply:os.system [true]", "not valid YAML"),
    ("2026-01-01", "a date is not a stack value"),
])
def test_set_values_are_not_evaluated(stacks_dir: Path, value: str, message: str) -> None:
    before = entries(stacks_dir)
    code, output = fork(stacks_dir, "aws-train-p5", "team-c", "--set", f"tags.when={value}")
    assert code == 2 and message in output
    assert entries(stacks_dir) == before


def test_the_templates_comments_come_along(stacks_dir: Path) -> None:
    assert fork(stacks_dir, "aws-train-p5", "team-d")[0] == 0
    text = (stacks_dir / "Pulumi.team-d.yaml").read_text()
    assert text.startswith("# Forked from aws-train-p5;")
    assert "# What to change when you fork:" in text


def test_a_fork_into_another_region_moves_the_provider_region_too(stacks_dir: Path) -> None:
    code, output = fork(stacks_dir, "aws-train-p5", "west", "--set", "region=us-west-2",
                        "--set", "network.zones=[us-west-2a]")
    assert code == 0, output
    config = read_config(stacks_dir / "Pulumi.west.yaml")
    assert config["aws:region"] == config["gpufleet:cluster"]["region"] == "us-west-2"


def test_a_fork_names_its_own_cluster(stacks_dir: Path) -> None:
    # Two forks of one template must not share the cluster name every account-scoped name is built from.
    for new in ("team-a", "team-b"):
        assert fork(stacks_dir, "aws-train-p5", new)[0] == 0
        assert read_config(stacks_dir / f"Pulumi.{new}.yaml")["gpufleet:cluster"]["name"] == new
    assert fork(stacks_dir, "aws-train-p5", "team-c", "--set", "name=research")[0] == 0
    assert read_config(stacks_dir / "Pulumi.team-c.yaml")["gpufleet:cluster"]["name"] == "research"
    code, output = fork(stacks_dir, "aws-train-p5", "Team_D")
    assert code == 2 and "add --set name=<cluster name>" in output
    assert not (stacks_dir / "Pulumi.Team_D.yaml").exists()


def test_set_with_plus_adds_a_node_group(stacks_dir: Path) -> None:
    extra = "{name: extra, instance_types: [g6e.48xlarge], size: {min: 0, desired: 1, max: 2}, capacity: spot}"
    code, output = fork(stacks_dir, "aws-train-p5", "grown", "--set", f"node_groups[+]={extra}",
                        "--set", "budget.max_hourly_usd=2000")
    assert code == 0, output
    groups = read_config(stacks_dir / "Pulumi.grown.yaml")["gpufleet:cluster"]["node_groups"]
    assert [g["name"] for g in groups] == ["h100", "extra"]  # the template's group kept: lists replace whole
    plan = CliRunner().invoke(cli.app, ["plan", "--stack", "grown", "--stacks-dir", str(stacks_dir),
                                        "--format", "json"])
    groups = {r["name"] for r in json.loads(plan.stdout)["resources"] if r["type"].startswith("aws:autoscaling/group")}
    assert groups == {"grown-h100-asg", "grown-extra-asg"}
    code, output = fork(stacks_dir, "aws-train-p5", "bad", "--set", "region[+]=x")
    assert code == 2 and "[+] adds an item to a list" in output
