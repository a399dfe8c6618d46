"""The alicloud-images stack under the offline engine: one image pipeline per boot mode the profile keeps, each an
image component running the lock's installer on the base image id `lock resolve` recorded (shown plainly missing
while none is recorded or the base is unconfirmed) and a first bake; the real-run refusals of a missing base."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi
import pytest
from alicloud_boot_lock import BIOS_BASE, RECORDED, REGION, UEFI_BASE, recorded_facts, use_lock
from conftest import SHIPPED_STACKS, of_type, registered_types
from resolved_facts import record

from components import runtime
from gpufleet import program
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock
from gpufleet.lock.bundle import image_check, installer_parts
from gpufleet.lock.needs import BaseNeed, image_stack_needs
from gpufleet.plan.engine import STACK_TYPE, run_program
from gpufleet.plan.planner import plan_stack
from gpufleet.stackfile import SpecInvalid, load_stack

STACK = SHIPPED_STACKS / "Pulumi.alicloud-images.yaml"
COMPONENT = "alicloud:ecs/ecsImageComponent:EcsImageComponent"
PIPELINE = "alicloud:ecs/ecsImagePipeline:EcsImagePipeline"
EXECUTION = "alicloud:ecs/imagePipelineExecution:ImagePipelineExecution"
PROFILE = "cuda12.8-r580"
GET_IMAGES = "alicloud:ecs/getImages:getImages"


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped lock with every fact its bake needs recorded beside it: each boot mode's base as `lock resolve
    --only base` records it, the repositories and downloads as tests/resolved_facts.py does."""
    needs = image_stack_needs(load_lock(DEFAULT_LOCK_PATH), PROFILE, "alicloud", REGION)
    others = record([need for need in needs if not isinstance(need, BaseNeed)])
    return use_lock(tmp_path, monkeypatch, facts=others.model_copy(
        update={"base_images": recorded_facts().base_images}))


@pytest.fixture
def unrecorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped lock with no resolved facts beside it (no lock.resolved.yaml)."""
    return use_lock(tmp_path, monkeypatch)


def pipelines(plan) -> dict[str, object]:
    """Boot mode -> the pipeline that bakes it (its gpufleet:boot-mode tag)."""
    return {p.inputs["tags"]["gpufleet:boot-mode"]: p for p in of_type(plan, PIPELINE)}


def in_template_order(plan, mode: str) -> list:
    """One pipeline's components as its template lists them (`COMPONENT <id>` lines, run in order)."""
    pipeline = pipelines(plan)[mode]
    ids = re.findall(r"^COMPONENT (\S+)$", pipeline.inputs["buildContent"], re.M)
    assert pipeline.inputs["buildContent"] == "".join(f"COMPONENT {i}\n" for i in ids)
    components = {c.urn: c for c in of_type(plan, COMPONENT) if c.name.startswith(f"images-{mode}-")}
    assert set(pipeline.property_dependencies["buildContent"]) == set(components)
    # The plan records each component's id as the engine returned it; match by the registered content.
    install, *parts = sorted(components.values(), key=lambda c: (c.name != f"images-{mode}-install", c.name))
    assert len(ids) == len(components)
    return [*parts, install]


def test_one_pipeline_per_boot_mode_runs_the_installer_parts_each_within_16_kb(recorded: Path) -> None:
    plan = plan_stack(STACK, SHIPPED_STACKS)
    assert plan.exit_code == 0, plan.policies["violations"]
    assert sorted(pipelines(plan)) == ["bios", "uefi"]
    parts = installer_parts(load_lock().profiles[PROFILE], "alicloud", True)
    for mode in ("uefi", "bios"):
        components = in_template_order(plan, mode)
        # One format throughout (Dockerfile, as the template's COMPONENT lines): one RUN per line.
        lines = [c.inputs["content"].splitlines() for c in components]
        assert all(line.startswith("RUN ") for body in lines for line in body)
        assert [line.removeprefix("RUN ") for body in lines for line in body][:-1] == parts
        assert lines[-1][-1] == f"RUN {image_check(booted=False)}"  # what it checks: tests/images/test_image_check.py
        # CreateImageComponent: the content size of an image component cannot exceed 16 KB; so the template.
        assert all(len(c.inputs["content"].encode()) <= 16 * 1024 for c in components)
        assert len(pipelines(plan)[mode].inputs["buildContent"].encode()) <= 16 * 1024
        for component in components:
            assert component.inputs["componentType"] == "Build" and component.inputs["systemType"] == "Linux"
            assert re.fullmatch(r"\d+\.\d+\.\d+", component.inputs["componentVersion"])
            assert component.inputs["imageComponentName"].startswith(f"Gpufleet-{PROFILE}-{mode}")


def test_each_pipeline_builds_from_the_recorded_id_of_its_boot_mode(
        recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = invokes(monkeypatch)
    plan = plan_stack(STACK, SHIPPED_STACKS)
    found = pipelines(plan)
    for mode, base in (("uefi", UEFI_BASE), ("bios", BIOS_BASE)):
        pipeline = found[mode]
        assert pipeline.inputs["baseImage"] == base and pipeline.inputs["baseImageType"] == "IMAGE"
        assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "recorded"
        assert pipeline.inputs["imageName"] == f"gpufleet-{PROFILE}-{mode}"
        assert "NOT RECORDED" not in pipeline.inputs["description"]
        assert pipeline.inputs["toRegionIds"] == ["cn-beijing"]
        assert pipeline.inputs["instanceType"] == "ecs.g7.2xlarge"
        assert pipeline.inputs["deleteInstanceOnFailure"] is True
        (execution,) = [e for e in of_type(plan, EXECUTION) if e.name == f"images-{mode}-bake"]
        assert execution.property_dependencies["imagePipelineId"] == (pipeline.urn,)
    # Built from the recorded id: no system image is looked up by name (only the stack's own bakes are read back).
    assert seen and all(args["owners"] == "self" for token, args in seen if token == GET_IMAGES)


def test_without_a_recorded_fact_the_plan_shows_no_base_image_rather_than_invent_one(unrecorded: Path) -> None:
    plan = plan_stack(STACK, SHIPPED_STACKS)
    for pipeline in pipelines(plan).values():
        assert pipeline.inputs.get("baseImage") is None
        assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "unresolved"
        assert "run `gpufleet lock resolve --only base`" in pipeline.inputs["description"]


def test_real_run_without_a_recorded_fact_is_refused_before_any_resource(
        unrecorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    seen = registered_types(monkeypatch)
    with pytest.raises(pulumi.RunError) as refused:
        run_stack()
    message = str(refused.value)
    # The program's gate names every unread fact of the bake, each base image by its boot mode's field.
    assert f"base_images.alicloud.{REGION}.uefi: not read from its source yet" in message
    assert f"base_images.alicloud.{REGION}.bios: not read from its source yet" in message
    assert "run `gpufleet lock resolve --only base`" in message
    assert set(seen) <= {STACK_TYPE}


def test_real_run_with_recorded_facts_bakes(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    assert {m: p.inputs["baseImage"] for m, p in pipelines(plan_stack(STACK, SHIPPED_STACKS)).items()} == {
        mode: image_id for mode, (image_id, _) in RECORDED.items()}


@pytest.mark.parametrize(("recorded_mode", "message"), [
    ("BIOS", f"the recorded base image {UEFI_BASE} boots BIOS"),
    (None, f"the recorded base image {UEFI_BASE} boots a boot mode it does not record"),
])
def test_a_recorded_fact_of_another_boot_mode_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded_mode: str | None, message: str) -> None:
    use_lock(tmp_path, monkeypatch, facts=recorded_facts({**RECORDED, "uefi": (UEFI_BASE, recorded_mode)}))
    with pytest.raises(SpecInvalid) as refused:
        plan_stack(STACK, SHIPPED_STACKS)
    text = str(refused.value)
    assert f"base_images.alicloud.{REGION}.uefi: {message}" in text
    assert "the lock wants UEFI (uefi)" in text and "gpufleet lock resolve --only base" in text


def unconfirm_uefi(raw: dict) -> None:
    raw["base_images"]["alicloud"][REGION]["uefi"] = {
        "parent_image": None, "status": "unconfirmed", "os": "Ubuntu 22.04",
        "note": "Confirm one with `aliyun ecs DescribeImages ...` and pin it."}


def test_unconfirmed_base_image_is_shown_missing_and_refused_by_a_real_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_lock(tmp_path, monkeypatch, unconfirm_uefi, recorded_facts())
    pipeline = pipelines(plan_stack(STACK, SHIPPED_STACKS))["uefi"]
    assert pipeline.inputs.get("baseImage") is None
    assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "unconfirmed"
    assert "BASE IMAGE UNCONFIRMED" in pipeline.inputs["description"]
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    seen = registered_types(monkeypatch)
    with pytest.raises(pulumi.RunError) as refused:
        run_stack()
    assert f"base_images.alicloud.{REGION}.uefi: parent_image is null" in str(refused.value)
    assert "aliyun ecs DescribeImages" in str(refused.value)
    assert set(seen) <= {STACK_TYPE}


def test_pinned_base_image_is_the_pipelines_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def pin_bios(raw: dict) -> None:
        raw["base_images"]["alicloud"][REGION]["bios"] = {"parent_image": BIOS_BASE, "os": "Ubuntu 22.04"}

    use_lock(tmp_path, monkeypatch, pin_bios, recorded_facts({"uefi": RECORDED["uefi"]}))
    pipeline = pipelines(plan_stack(STACK, SHIPPED_STACKS))["bios"]
    assert pipeline.inputs["baseImage"] == BIOS_BASE
    assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "pinned"


def test_a_boot_mode_without_a_base_image_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_lock(tmp_path, monkeypatch, lambda raw: raw["base_images"]["alicloud"][REGION].pop("bios"), recorded_facts())
    with pytest.raises(SpecInvalid) as refused:
        plan_stack(STACK, SHIPPED_STACKS)
    assert "keeps a bios image in cn-wulanchabu but images/lock.yaml has no bios base image" in str(refused.value)


def invokes(monkeypatch: pytest.MonkeyPatch, own: list[dict] | None = None) -> list[tuple[str, dict]]:
    """Record every data-source call (token, args); ecs.getImages answers `own` in cn-beijing, nothing elsewhere."""
    from gpufleet.plan.mock_dispatch import OfflineMocks

    original, asked = OfflineMocks.call, []

    def call(self: object, args: pulumi.runtime.MockCallArgs) -> dict:
        asked.append((args.token, dict(args.args)))
        if args.token != GET_IMAGES:
            return original(self, args)
        images = (own or []) if args.provider and "cn-beijing" in args.provider else []
        named = [i for i in images if i["name"].startswith(args.args["nameRegex"].replace("\\", "").lstrip("^"))]
        return {"id": "x", "ids": [i["id"] for i in named], "images": named, "names": []}

    monkeypatch.setattr(OfflineMocks, "call", call)
    return asked


def run_stack() -> None:
    run_program(program.build, load_stack(STACK, SHIPPED_STACKS), project="gpufleet", stack="alicloud-images",
                region=REGION, zones=[])


def exports_of_a_plan(monkeypatch: pytest.MonkeyPatch) -> dict:
    exported: dict = {}

    def export(key: str, value: object) -> None:
        pulumi.Output.from_input(value).apply(lambda resolved: exported.__setitem__(key, resolved))

    monkeypatch.setattr(program.pulumi, "export", export)
    run_stack()
    return exported


def test_exports_each_boot_modes_bake_and_leave_images_empty_until_a_bake(
        recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exported = exports_of_a_plan(monkeypatch)
    assert (exported["profile"], exported["cloud"], exported["stack"]) == (PROFILE, "alicloud", "alicloud-images")
    assert sorted(exported["boot_modes"]) == ["bios", "uefi"]
    for mode, (base, _) in RECORDED.items():
        bake = exported["boot_modes"][mode]
        assert bake["images"] == {}  # offline nothing is baked: DescribeImages finds no own image
        assert (bake["parent_image"], bake["image_name"]) == (base, f"gpufleet-{PROFILE}-{mode}")
        assert bake["pipeline_id"].startswith("ip-") and bake["execution_id"].startswith("exec-")


def test_images_export_only_what_this_execution_made_per_region_and_boot_mode(
        recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    baked, older = "m-2zeabcdefghij0123456", "m-2zeolderbakeolder012"
    # The mock execution started 2025-01-01T00:00:00Z: the image of an earlier bake of the same name is not taken.
    asked = invokes(monkeypatch, own=[
        {"id": older, "name": "gpufleet-cuda12.8-r580-bios_0", "creationTime": "2024-12-31T23:59:00Z"},
        {"id": baked, "name": "gpufleet-cuda12.8-r580-bios_1", "creationTime": "2025-01-01T03:10:00Z"},
    ])
    exported = exports_of_a_plan(monkeypatch)
    # The copy region found the BIOS bake; the build region nothing, and the UEFI bake is not the BIOS one.
    assert exported["boot_modes"]["bios"]["images"] == {"cn-beijing": baked}
    assert exported["boot_modes"]["uefi"]["images"] == {}
    own = sorted(args["nameRegex"] for token, args in asked if token == GET_IMAGES)
    assert own == [r"^gpufleet\-cuda12\.8\-r580\-bios"] * 2 + [r"^gpufleet\-cuda12\.8\-r580\-uefi"] * 2


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"parent_image": None, "os": "Ubuntu 22.04"}, "parent_image is null: set status: unconfirmed"),
        ({"parent_image": None, "status": "unconfirmed", "os": "Ubuntu 22.04"}, "and a note"),
        ({"parent_image": UEFI_BASE, "status": "unconfirmed", "os": "Ubuntu 22.04"}, "status is unconfirmed but"),
    ],
)
def test_lock_base_image_is_null_only_when_unconfirmed_with_a_note(entry: dict, message: str) -> None:
    from gpufleet.lock.model import BaseImage

    with pytest.raises(ValueError, match=re.escape(message)):
        BaseImage.model_validate(entry)
