"""The plan says when the stack's Kubernetes version has left standard support or leaves it within 60 days: in the
plan JSON (summary.warnings) and the table. The day is fixed by the test."""

from __future__ import annotations

import functools
import json
from datetime import date

import pytest
from conftest import read_cluster, without_job_operators, write_stack
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.plan import planner
from gpufleet.plan.planner import plan_stack


@pytest.fixture
def eks_stack(stacks_dir):
    """The shipped EKS stack less its job operators: the warning is of the control plane's version."""
    return write_stack(stacks_dir, "aws-train-eks", without_job_operators(read_cluster("aws-train-eks")))


def test_no_warning_inside_standard_support(eks_stack, stacks_dir) -> None:
    assert "warnings" not in plan_stack(eks_stack, stacks_dir, today=date(2026, 11, 25)).summary


def test_warning_within_60_days_of_the_end(eks_stack, stacks_dir) -> None:
    (warning,) = plan_stack(eks_stack, stacks_dir, today=date(2027, 2, 1)).summary["warnings"]
    assert warning.startswith("scheduler.version: Kubernetes 1.35 on aws: standard support ends on 2027-03-27")


def test_warning_after_the_end(eks_stack, stacks_dir) -> None:
    (warning,) = plan_stack(eks_stack, stacks_dir, today=date(2027, 6, 1)).summary["warnings"]
    assert "standard support ended on 2027-03-27" in warning and "until 2028-03-27" in warning


def test_a_vm_stack_has_no_warnings(stacks_dir) -> None:
    path = stacks_dir / "Pulumi.aws-train-p5.yaml"
    assert "warnings" not in plan_stack(path, stacks_dir, today=date(2030, 1, 1)).summary


def test_the_cli_shows_the_warning_in_json_and_table(eks_stack, stacks_dir, monkeypatch) -> None:
    # Planned once for both formats: what is tested is how each shows the plan's warning.
    real = planner.plan_and_prepared
    dated = functools.cache(lambda path, directory: real(path, directory, date(2027, 6, 1)))
    monkeypatch.setattr(planner, "plan_and_prepared", lambda path, directory=None, today=None: dated(path, directory))
    args = ["plan", "--stack", "aws-train-eks", "--stacks-dir", str(stacks_dir)]
    table = CliRunner().invoke(app, args)
    assert "warning: scheduler.version: Kubernetes 1.35 on aws: standard support ended" in " ".join(
        table.output.split())
    shown = CliRunner().invoke(app, [*args, "--format", "json"])
    assert json.loads(shown.output)["summary"]["warnings"][0].startswith("scheduler.version: Kubernetes 1.35")


def test_the_markdown_report_shows_the_warning(eks_stack, stacks_dir, monkeypatch) -> None:
    real = planner.plan_and_prepared
    monkeypatch.setattr(planner, "plan_and_prepared",
                        lambda path, directory=None, today=None: real(path, directory, date(2027, 2, 1)))
    report = CliRunner().invoke(app, ["plan", "--stack", "aws-train-eks", "--stacks-dir", str(stacks_dir), "--format",
                                      "markdown"])
    assert "**warning**: scheduler.version: Kubernetes 1.35 on aws: standard support ends on 2027-03-27" in (
        " ".join(report.output.split()))
