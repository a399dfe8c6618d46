"""An image profile not baked yet: the offline plan shows it and names the next command; a real run refuses it."""

from __future__ import annotations

import contextvars
import copy
from pathlib import Path

import libyaml_files
import pulumi
import pytest
from conftest import SHIPPED_STACKS, registered_types

from components import runtime
from gpufleet import program
from gpufleet.lock import DEFAULT_LOCK_PATH, loader
from gpufleet.plan.engine import STACK_TYPE, run_program
from gpufleet.plan.mock_dispatch import OfflineMocks
from gpufleet.plan.planner import plan_stack
from gpufleet.stackfile import SpecInvalid, load_stack

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
BAKED_AMI = "ami-0123456789abcdef0"
TRAIN = SHIPPED_STACKS / "Pulumi.aws-train-p5.yaml"


@pytest.fixture
def baked_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The shipped lock with cuda12.8-r580 baked in us-east-1, made the default for every reader."""
    raw = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    raw = copy.deepcopy(raw)
    raw["profiles"]["cuda12.8-r580"]["images"]["aws"]["us-east-1"] = {"id": BAKED_AMI, "status": "baked"}
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    monkeypatch.setattr(loader.load_lock, "__defaults__", (path,))
    return BAKED_AMI


def templates(plan) -> list:
    found = [r for r in plan.resources if r.type == LAUNCH_TEMPLATE]
    assert found
    return found


def test_plan_shows_the_unbaked_profile_and_names_the_pin_command() -> None:
    plan = plan_stack(TRAIN, SHIPPED_STACKS)
    assert plan.exit_code == 0
    for template in templates(plan):
        assert "imageId" not in template.inputs or template.inputs["imageId"] is None
        assert template.inputs["tags"]["gpufleet:image-profile"] == "cuda12.8-r580"
        assert template.inputs["tags"]["gpufleet:image-status"] == "unbaked"
        assert template.inputs["tags"]["gpufleet:image-stack"] == "aws-images"
        assert "image profile cuda12.8-r580 UNBAKED: no AMI yet" in template.inputs["description"]
    findings = [v for v in plan.policies["violations"] if v["policy"] == "aws-image-unbaked"]
    assert {f["urn"] for f in findings} == {t.urn for t in templates(plan)}
    assert all(f["level"] == "advisory" for f in findings)
    assert "`gpufleet images pin --stack aws-images`" in findings[0]["message"]


def test_plan_of_a_baked_profile_boots_the_pinned_id(baked_lock: str) -> None:
    plan = plan_stack(TRAIN, SHIPPED_STACKS)
    for template in templates(plan):
        assert template.inputs["imageId"] == baked_lock
        assert template.inputs["tags"]["gpufleet:image-status"] == "baked"
        assert "gpufleet:image-stack" not in template.inputs["tags"]
        assert "UNBAKED" not in template.inputs["description"]
    assert plan.policies["violations"] == []


def test_real_run_refuses_the_unbaked_profile_before_any_resource(monkeypatch: pytest.MonkeyPatch,
                                                                   stacks_dir: Path) -> None:
    # The shipped stack's alarm address is a placeholder, which a real run refuses first: a fork with a real one.
    train = stacks_dir / "Pulumi.train.yaml"
    train.write_text("config:\n  aws:region: us-east-1\n  gpufleet:cluster:\n    extends: aws-train-p5\n"
                     "    name: train\n    monitoring: {alarms: {target: create, emails: [ops@corp.io]}}\n")
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    seen = registered_types(monkeypatch)
    config = load_stack(train, stacks_dir)
    with pytest.raises(pulumi.RunError) as refused:
        run_program(program.build, config, project="gpufleet", stack="aws-train-p5", region="us-east-1",
                    zones=["us-east-1a"])
    message = str(refused.value)
    assert message.startswith("image: profile 'cuda12.8-r580' has no baked aws image in us-east-1")
    assert "`pulumi up --stack aws-images`" in message and "`gpufleet images pin --stack aws-images`" in message
    assert set(seen) <= {STACK_TYPE}
    # gpufleet plan reports the same refusal as invalid input (exit 2), not a crash.
    with pytest.raises(SpecInvalid, match="has no baked aws image in us-east-1"):
        plan_stack(train, stacks_dir)


def test_real_run_of_a_baked_profile_is_not_refused(monkeypatch: pytest.MonkeyPatch, baked_lock: str) -> None:
    monkeypatch.setattr(program, "refuse_placeholders", lambda prepared: None)  # the shipped alarm address is one
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    plan = plan_stack(TRAIN, SHIPPED_STACKS)
    assert {t.inputs["imageId"] for t in templates(plan)} == {baked_lock}


def test_offline_is_told_by_the_monitor_not_by_config(monkeypatch: pytest.MonkeyPatch) -> None:
    def told() -> None:
        pulumi.runtime.set_mocks(OfflineMocks(region="us-east-1", zones=["us-east-1a"]), preview=True)
        assert runtime.running_offline()
        # The Pulumi CLI's engine hands the program a gRPC monitor stub, not a MockMonitor.
        monkeypatch.setattr(pulumi.runtime.settings, "get_monitor", lambda: object())
        assert not runtime.running_offline()

    # The SDK's settings are context variables: set in a copy of this context, the mocks and the preview flag end
    # with the test (left on the worker's thread, later tests calling a refusal saw a preview and a mock monitor).
    contextvars.copy_context().run(told)
