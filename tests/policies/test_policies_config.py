"""The pack config: `gpufleet plan` and `gpufleet policy-config` build it with one function, for cluster
stacks and image stacks alike."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED_STACKS, shipped_plan
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.plan import planner
from gpufleet.plan.planner import plan_stack
from policies.common import image_lock

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in SHIPPED_STACKS.glob("Pulumi.*.yaml"))


def config_the_plan_used(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    used: dict[str, Any] = {}
    run = planner.run_policies
    # The pack config is built from the stack file alone: the engine's part is answered with the resources this
    # process recorded for the same shipped file (shipped_plan), not registered again.
    recorded = shipped_plan(planner.stack_name(path)).resources

    def recording(resources, config, *args):
        used.update(config)
        return run(resources, config, *args)

    monkeypatch.setattr(planner, "run_program", lambda *args, **kwargs: copy.deepcopy(recorded))
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


def test_image_stack_plan_evaluates_the_image_lock_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    # A region the profile lacks is refused before the plan (test_images_spec.py); a profile whose driver
    # branch has reached end of life since it was pinned is the lock rule's to fail.
    class AfterR580EndOfLife(date):
        @classmethod
        def today(cls) -> date:
            return date(2028, 7, 1)

    monkeypatch.setattr(image_lock, "date", AfterR580EndOfLife)
    result = plan_stack(SHIPPED_STACKS / "Pulumi.aws-images.yaml", SHIPPED_STACKS)
    found = [v for v in result.policies["violations"] if v["policy"] == "image-lock-valid"]
    assert found and all(v["level"] == "mandatory" for v in found) and result.exit_code == 1
    assert any("R580 reached end of life on 2028-06-30" in v["message"] for v in found), found


def test_shipped_image_stack_passes_the_image_lock_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    path = SHIPPED_STACKS / "Pulumi.aws-images.yaml"
    used = config_the_plan_used(path, monkeypatch)
    regions = {"aws": ["us-east-1", "us-west-2"]}
    assert used["image-lock-valid"] == {"profile": "cuda12.8-r580", "requiredRegions": regions}
    assert plan_stack(path, SHIPPED_STACKS).policies["violations"] == []
