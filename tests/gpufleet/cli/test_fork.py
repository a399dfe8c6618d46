"""`gpufleet fork` is safe: the new name is checked first, nothing is left behind by a refused fork, `--set`
reaches dashed keys and reads values as YAML 1.2, and the template's guidance comments come along."""

from __future__ import annotations

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
