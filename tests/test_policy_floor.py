"""The gate cannot be switched off from the stack it checks: organisation floors and dated exceptions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet import cli

BODY = "config:\n  aws:region: us-east-1\n  gpufleet:policy: {policy}\n  gpufleet:cluster: {{extends: aws-train-p5}}\n"


def plan(stacks_dir: Path, policy: str, *extra: str) -> tuple[int, str]:
    (stacks_dir / "Pulumi.gated.yaml").write_text(BODY.format(policy=policy))
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "gated", "--stacks-dir", str(stacks_dir), *extra])
    return result.exit_code, result.output


@pytest.mark.parametrize("policy", ["{all: disabled}", "{aws-imdsv2-required: advisory}",
                                    "{aws-imdsv2-required: {enforcementLevel: disabled}}"])
def test_a_stack_cannot_lower_a_mandatory_rule(stacks_dir: Path, policy: str) -> None:
    code, output = plan(stacks_dir, policy)
    assert code == 2
    assert "is below the organisation floor of aws-imdsv2-required (mandatory); a stack cannot lower it" in output


def test_a_stack_may_tighten_an_advisory_rule(stacks_dir: Path) -> None:
    code, output = plan(stacks_dir, "{aws-image-unbaked: mandatory}", "--format", "json")
    assert code == 1  # the shipped lock is unbaked: now a mandatory finding
    assert json.loads(output)["policies"]["exceptions"] == []


def test_a_listed_exception_lowers_the_rule_and_is_reported(stacks_dir: Path, organisation) -> None:
    organisation(
        "floors: {}\nexceptions:\n  - rule: aws-imdsv2-required\n    stacks: [gated]\n    level: advisory\n"
        "    reason: \"legacy agent needs IMDSv1 until it is replaced (OPS-42)\"\n    expires: 2999-01-01\n"
    )
    code, output = plan(stacks_dir, "{aws-imdsv2-required: advisory}", "--format", "json")
    assert code == 0, output
    assert json.loads(output)["policies"]["exceptions"] == [{
        "rule": "aws-imdsv2-required", "level": "advisory",
        "reason": "legacy agent needs IMDSv1 until it is replaced (OPS-42)", "expires": "2999-01-01",
    }]
    code, output = plan(stacks_dir, "{aws-imdsv2-required: advisory}")
    assert "exception: aws-imdsv2-required allowed at advisory until 2999-01-01" in " ".join(output.split())


def test_an_expired_exception_no_longer_lowers_the_rule(stacks_dir: Path, organisation) -> None:
    organisation(
        "exceptions:\n  - rule: aws-imdsv2-required\n    stacks: [gated]\n    level: disabled\n"
        "    reason: \"migration window for the old AMI\"\n    expires: 2020-01-01\n"
    )
    code, output = plan(stacks_dir, "{aws-imdsv2-required: disabled}")
    assert code == 2 and "the exception for aws-imdsv2-required expired on 2020-01-01" in output


def test_an_organisation_floor_raises_a_rule_the_stack_does_not_set(stacks_dir: Path, organisation) -> None:
    organisation("floors: {aws-image-unbaked: mandatory}\n")
    code, output = plan(stacks_dir, "{}", "--format", "json")
    assert code == 1
    violations = json.loads(output)["policies"]["violations"]
    assert {(v["policy"], v["level"]) for v in violations} == {("aws-image-unbaked", "mandatory")}
