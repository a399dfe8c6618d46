"""Errors in a person's words: the field, the reason and the fix, with the closest valid name where a name is
misspelt, the file a YAML error is in, and every refusal a command makes said the same way (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpufleet import cli

MISSPELT = """config:
  aws:region: us-east-1
  gpufleet:cluster:
    extends: aws-train-p5
    network: {vpc_idd: vpc-0123456789abcdef0}
    node_groups:
      - {name: aa, instance_types: [p5.48xlarg], size: {min: 0, desired: 1, max: 2}}
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_misspelt_names_get_the_closest_valid_one(stacks_dir: Path) -> None:
    (stacks_dir / "Pulumi.misspelt.yaml").write_text(MISSPELT)
    code, _, stderr = run("plan", "--stack", "misspelt", "--stacks-dir", str(stacks_dir))
    assert code == 2
    assert "network.vpc_idd: unknown field; check its spelling against `gpufleet schema`; did you mean 'vpc_id'?" \
        in stderr
    assert "unknown instance type 'p5.48xlarg' for aws; did you mean 'p5.48xlarge'?" in stderr
    # A list cut short says so.
    assert "more (all: `gpufleet catalog --cloud aws`)" in stderr


def test_a_validators_message_reads_without_pydantics_prefix(stacks_dir: Path) -> None:
    (stacks_dir / "Pulumi.sized.yaml").write_text(
        MISSPELT.replace("{vpc_idd: vpc-0123456789abcdef0}", "{}").replace("p5.48xlarg", "p5.48xlarge")
        .replace("{min: 0, desired: 1, max: 2}", "{min: 3, desired: 1, max: 2}"))
    code, _, stderr = run("plan", "--stack", "sized", "--stacks-dir", str(stacks_dir))
    assert code == 2 and "node_groups[0].size: " in stderr and "Value error" not in stderr


def test_a_yaml_error_names_the_file(stacks_dir: Path) -> None:
    path = stacks_dir / "Pulumi.broken.yaml"
    path.write_text("config:\n  aws:region: [\n")
    code, _, stderr = run("plan", "--stack", "broken", "--stacks-dir", str(stacks_dir))
    assert code == 2 and f'in "{path}", line 3' in stderr and "<unicode string>" not in stderr


def test_json_plan_of_an_invalid_stack_is_still_a_document(stacks_dir: Path) -> None:
    (stacks_dir / "Pulumi.misspelt.yaml").write_text(MISSPELT)
    code, stdout, _ = run("plan", "--stack", "misspelt", "--stacks-dir", str(stacks_dir), "--format", "json")
    document = json.loads(stdout)
    assert code == 2 and document["stack"] == "misspelt" and document["exit_code"] == 2
    assert {"field": "network.vpc_idd", "message": "unknown field; check its spelling against `gpufleet schema`; "
            "did you mean 'vpc_id'?"} in document["errors"]


def test_every_invalid_policy_level_is_refused_alike(stacks_dir: Path) -> None:
    (stacks_dir / "Pulumi.levels.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:cluster: {extends: aws-train-p5, name: levels}\n"
        "  gpufleet:policy:\n    aws-node-gpu-metrics: {enforcementLevel: 0}\n    aws-alarm-has-target: Disabled\n")
    code, _, stderr = run("plan", "--stack", "levels", "--stacks-dir", str(stacks_dir))
    assert code == 2
    assert "gpufleet:policy.aws-node-gpu-metrics.enforcementLevel: 0 is not an enforcement level" in stderr
    assert "gpufleet:policy.aws-alarm-has-target: 'Disabled' is not an enforcement level (one of advisory, " \
        "mandatory, remediate, disabled)" in stderr


def test_catalog_refuses_an_unknown_gpu_as_quote_does() -> None:
    for args in (["catalog", "--gpu", "B300"], ["quote", "--gpu", "B300", "--count", "8"]):
        code, _, stderr = run(*args)
        assert code == 2 and "no catalog type has GPU model 'B300'; known: " in stderr and "H100" in stderr


def test_version_and_plain_help() -> None:
    code, stdout, _ = run("--version")
    assert code == 0 and stdout.startswith("gpufleet 0.")
    _, help_text, _ = run("plan", "--help")
    assert "(else [secret], as `pulumi preview`)" in " ".join(help_text.split())  # help is never read as markup
    assert "<bool>" not in help_text and "<list[" not in run("fork", "--help")[1]
