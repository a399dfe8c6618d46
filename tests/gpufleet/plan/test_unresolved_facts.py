"""Unread facts: the plan names each with its field and the command that reads it; a real `pulumi up` of an image
stack refuses them before the build network exists, a preview warns; a full record lets both through."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest
from conftest import SHIPPED_STACKS, registered_types
from resolved_facts import record, write_beside

from components import runtime
from gpufleet import program
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock, loader
from gpufleet.lock.needs import image_stack_needs
from gpufleet.plan.engine import STACK_TYPE, run_program
from gpufleet.plan.planner import plan_stack
from gpufleet.stackfile import load_stack

IMAGES = SHIPPED_STACKS / "Pulumi.aws-images.yaml"


@pytest.fixture
def resolved_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped lock, made the default, with every fact the aws-images bake needs recorded."""
    path = tmp_path / "lock.yaml"
    path.write_text(DEFAULT_LOCK_PATH.read_text())
    monkeypatch.setattr(loader.load_lock, "__defaults__", (path,))
    spec = load_stack(IMAGES, SHIPPED_STACKS)["gpufleet:images"]
    write_beside(path, record(image_stack_needs(load_lock(), spec["profile"], "aws", spec["regions"][0])))
    return path


def unresolved(plan) -> dict[str, str]:
    return {f["field"]: f["message"] for f in plan.summary.get("unresolved_facts", [])}


def test_the_plan_names_each_unread_fact_of_an_image_stack() -> None:
    plan = plan_stack(IMAGES, SHIPPED_STACKS)
    found = unresolved(plan)
    assert "profiles.cuda12.8-r580.fabric.aws.efa_installer.sha256" in found
    assert "profiles.cuda12.8-r580.apt" in found and "base_images.aws.us-east-1" in found
    assert "`gpufleet lock resolve --only downloads`" in found["profiles.cuda12.8-r580.fabric.aws.efa_installer.sha256"]
    assert not any(".azure." in field or ".alicloud." in field for field in found)  # only what this bake reads
    assert plan.exit_code == 0


def test_a_full_record_leaves_no_finding(resolved_lock: Path) -> None:
    assert unresolved(plan_stack(IMAGES, SHIPPED_STACKS)) == {}


def run_images(monkeypatch: pytest.MonkeyPatch, dry_run: bool) -> list[str]:
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: dry_run)
    seen = registered_types(monkeypatch)
    run_program(program.build, load_stack(IMAGES, SHIPPED_STACKS), project="gpufleet", stack="aws-images",
                region="us-east-1", zones=["us-east-1a"])
    return seen


def test_up_refuses_unread_facts_before_any_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(pulumi.RunError) as refused:
        run_images(monkeypatch, dry_run=False)
    message = str(refused.value)
    assert "nothing was created" in message and "profiles.cuda12.8-r580.fabric.aws.efa_installer.sha256" in message
    assert "gpufleet lock resolve" in message


def test_a_preview_warns_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    seen = run_images(monkeypatch, dry_run=True)
    assert any("`pulumi up` stops here" in w for w in warned)
    assert "aws:imagebuilder/imagePipeline:ImagePipeline" in seen


def test_up_with_a_full_record_is_not_refused(monkeypatch: pytest.MonkeyPatch, resolved_lock: Path) -> None:
    seen = run_images(monkeypatch, dry_run=False)
    assert set(seen) > {STACK_TYPE}
