"""The pack config: `gpufleet plan` and `gpufleet policy-config` build it with one function, for cluster
stacks and image stacks alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SHIPPED_STACKS
from typer.testing import CliRunner

from components.cli import app
from components.plan import planner
from components.plan.planner import plan_stack

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in SHIPPED_STACKS.glob("Pulumi.*.yaml"))


def config_the_plan_used(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    used: dict[str, Any] = {}
    run = planner.run_policies

    def recording(resources, config, *args):
        used.update(config)
        return run(resources, config, *args)

    monkeypatch.setattr(planner, "run_policies", recording)
    plan_stack(path, path.parent)
    return used


@pytest.mark.parametrize("stack", STACKS)
def test_plan_and_policy_config_build_the_same_config(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["policy-config", "--stack", stack, "--stacks-dir", str(SHIPPED_STACKS)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert config_the_plan_used(SHIPPED_STACKS / f"Pulumi.{stack}.yaml", monkeypatch) == printed
    assert "profile" in printed["image-lock-valid"]


def test_image_stack_plan_evaluates_the_image_lock_rule(tmp_path: Path) -> None:
    doc = yaml.safe_load((SHIPPED_STACKS / "Pulumi.aws-images.yaml").read_text())
    doc["config"]["gpufleet:images"]["regions"] = ["us-east-1", "ap-south-1"]  # no pinned image in ap-south-1
    path = tmp_path / "Pulumi.images-far.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = plan_stack(path, tmp_path)
    found = [v for v in result.policies["violations"] if v["policy"] == "image-lock-valid"]
    assert found and all(v["level"] == "mandatory" for v in found) and result.exit_code == 1
    assert any("ap-south-1" in v["message"] for v in found), found


def test_shipped_image_stack_passes_the_image_lock_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    path = SHIPPED_STACKS / "Pulumi.aws-images.yaml"
    used = config_the_plan_used(path, monkeypatch)
    regions = {"aws": ["us-east-1", "us-west-2"]}
    assert used["image-lock-valid"] == {"profile": "cuda12.8-r580", "requiredRegions": regions}
    assert plan_stack(path, SHIPPED_STACKS).policies["violations"] == []
