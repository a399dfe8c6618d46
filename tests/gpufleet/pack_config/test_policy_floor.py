"""The gate cannot be switched off from the stack it checks: organisation floors and dated exceptions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.stackfile import SpecInvalid

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


EXCEPTION = ("floors: {}\nexceptions:\n  - rule: aws-imdsv2-required\n    stacks: [gated]\n    level: advisory\n"
             "    reason: \"legacy agent needs IMDSv1 until it is replaced (OPS-42)\"\n    expires: 2999-01-01\n")


@pytest.mark.parametrize("where", ["elsewhere", "elsewhere/stacks", "stacks/nested", "stacks-copy"])
def test_an_exception_binds_to_the_projects_stack_file_not_its_name(
    stacks_dir: Path, organisation, tmp_path: Path, where: str
) -> None:
    """The same file (same name, same text) outside the organisation file's project stacks/ gets no exception."""
    organisation(EXCEPTION)
    assert plan(stacks_dir, "{aws-imdsv2-required: advisory}")[0] == 0  # the project's own file: granted
    other = tmp_path / where
    shutil.copytree(stacks_dir, other, dirs_exist_ok=True)
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "gated", "--stacks-dir", str(other)])
    assert result.exit_code == 2, result.output
    assert "its exceptions apply only to the project's own stack files" in " ".join(result.output.split())
    file = CliRunner().invoke(cli.app, ["plan", "--stack-file", str(other / "Pulumi.gated.yaml"),
                                        "--stacks-dir", str(other)])
    assert file.exit_code == 2, file.output
    config = CliRunner().invoke(cli.app, ["policy-config", "--stack", "gated", "--stacks-dir", str(other)])
    assert config.exit_code == 2, config.output


def test_under_the_cli_an_exception_binds_to_this_projects_file(stacks_dir: Path, organisation, monkeypatch) -> None:
    """The pack grants an exception only for this project's stack whose file in the checkout is what the CLI sent:
    another project's stack of that name, or a changed config under that name, gets the floor."""
    from gpufleet.yaml_model import read_yaml
    from policies import stack_settings

    organisation(EXCEPTION)
    plan(stacks_dir, "{aws-imdsv2-required: advisory}")
    monkeypatch.setattr(stack_settings, "STACKS_DIR", stacks_dir)
    config = read_yaml(stacks_dir / "Pulumi.gated.yaml")["config"]
    sent = {key: json.dumps(value) if not isinstance(value, str) else value for key, value in config.items()}
    granted = stack_settings.derived_settings("gated", sent, "gpufleet")
    assert granted is not None and granted["aws-imdsv2-required"].level == "advisory"
    with pytest.raises(SpecInvalid, match="apply only to the project's own stack files"):
        stack_settings.derived_settings("gated", sent, "another-project")
    changed = {**sent, "gpufleet:cluster": json.dumps({"extends": "aws-infer-g6e"})}
    with pytest.raises(SpecInvalid, match="apply only to the project's own stack files"):
        stack_settings.derived_settings("gated", changed, "gpufleet")
