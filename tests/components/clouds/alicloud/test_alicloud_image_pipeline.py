"""The alicloud-images stack under the offline engine: an image component running the lock's installer, a
pipeline on the lock's base image (shown plainly missing while unconfirmed), a first bake; the real-run refusal
of an unconfirmed base; and `gpufleet images pin` of what the stack outputs."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pulumi
import pytest
import yaml
from conftest import SHIPPED_STACKS, of_type, one, registered_types
from typer.testing import CliRunner

from components import runtime
from gpufleet import program
from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, check_lock, load_lock, loader
from gpufleet.lock.bundle import installer_parts
from gpufleet.plan.engine import STACK_TYPE, run_program
from gpufleet.plan.planner import plan_stack
from gpufleet.stackfile import SpecInvalid, load_stack

STACK = SHIPPED_STACKS / "Pulumi.alicloud-images.yaml"
COMPONENT = "alicloud:ecs/ecsImageComponent:EcsImageComponent"
PIPELINE = "alicloud:ecs/ecsImagePipeline:EcsImagePipeline"
EXECUTION = "alicloud:ecs/imagePipelineExecution:ImagePipelineExecution"
PROFILE = "cuda12.8-r580"
BASE = "ubuntu_22_04_uefi_x64_20G_alibase_20230515.vhd"  # the shape of a public image name, for a pinned lock


@pytest.fixture
def pinned_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The shipped lock with the cn-wulanchabu base image confirmed, made the default for every reader."""
    raw = copy.deepcopy(yaml.safe_load(DEFAULT_LOCK_PATH.read_text()))
    raw["base_images"]["alicloud"]["cn-wulanchabu"] = {"parent_image": BASE, "status": "pinned", "os": "Ubuntu"}
    path = tmp_path / "lock.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(loader.load_lock, "__defaults__", (path,))
    return BASE



@pytest.fixture
def unconfirmed_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped lock with the cn-wulanchabu base image unconfirmed (null, a note), made the default."""
    raw = copy.deepcopy(yaml.safe_load(DEFAULT_LOCK_PATH.read_text()))
    raw["base_images"]["alicloud"]["cn-wulanchabu"] = {
        "parent_image": None, "status": "unconfirmed", "os": "Ubuntu 22.04",
        "note": "Confirm one with `aliyun ecs DescribeImages ...` and pin it."}
    path = tmp_path / "lock.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(loader.load_lock, "__defaults__", (path,))


def in_template_order(plan) -> list:
    """The components as the pipeline's template lists them (`COMPONENT <id>` lines, run in order)."""
    pipeline = one(plan, PIPELINE)
    ids = re.findall(r"^COMPONENT (\S+)$", pipeline.inputs["buildContent"], re.M)
    assert pipeline.inputs["buildContent"] == "".join(f"COMPONENT {i}\n" for i in ids)
    components = {c.urn: c for c in of_type(plan, COMPONENT)}
    assert set(pipeline.property_dependencies["buildContent"]) == set(components)
    # The plan records each component's id as the engine returned it; match by the registered content.
    by_name = sorted(components.values(), key=lambda c: (c.name != "images-install", c.name))
    install, *parts = by_name
    assert len(ids) == len(components)
    return [*parts, install]


def test_components_run_the_installer_parts_of_the_lock_profile_each_within_16_kb() -> None:
    plan = plan_stack(STACK, SHIPPED_STACKS)
    assert plan.exit_code == 0, plan.policies["violations"]
    components = in_template_order(plan)
    parts = installer_parts(load_lock().profiles[PROFILE], "alicloud", True)
    # One format throughout (Dockerfile, as the template's COMPONENT lines): one RUN per line.
    lines = [c.inputs["content"].splitlines() for c in components]
    assert all(line.startswith("RUN ") for body in lines for line in body)
    assert [line.removeprefix("RUN ") for body in lines for line in body][:-1] == parts
    assert "modinfo nvidia" in lines[-1][-1]
    # CreateImageComponent: the content size of an image component cannot exceed 16 KB; so the template.
    assert all(len(c.inputs["content"].encode()) <= 16 * 1024 for c in components)
    assert len(one(plan, PIPELINE).inputs["buildContent"].encode()) <= 16 * 1024
    for component in components:
        assert component.inputs["componentType"] == "Build" and component.inputs["systemType"] == "Linux"
        assert re.fullmatch(r"\d+\.\d+\.\d+", component.inputs["componentVersion"])
        assert component.inputs["imageComponentName"][0].isupper()


def test_pipeline_builds_the_components_and_copies_to_the_other_regions() -> None:
    plan = plan_stack(STACK, SHIPPED_STACKS)
    pipeline, execution = one(plan, PIPELINE), one(plan, EXECUTION)
    assert pipeline.inputs["buildContent"].startswith("COMPONENT ic-")
    assert len(in_template_order(plan)) >= 2
    assert pipeline.inputs["toRegionIds"] == ["cn-beijing"]
    assert pipeline.inputs["baseImageType"] == "IMAGE" and pipeline.inputs["deleteInstanceOnFailure"] is True
    assert pipeline.inputs["instanceType"] == "ecs.g7.2xlarge"
    assert execution.property_dependencies["imagePipelineId"] == (pipeline.urn,)


def system_images(monkeypatch: pytest.MonkeyPatch, system: list[dict], own: list[dict] | None = None) -> list[dict]:
    """Answer ecs.getImages: `system` for owners=system, `own` (in cn-beijing only) for owners=self; returns the
    queries asked."""
    from gpufleet.plan.mock_dispatch import OfflineMocks

    original, asked = OfflineMocks.call, []

    def call(self: object, args: pulumi.runtime.MockCallArgs) -> dict:
        if args.token != "alicloud:ecs/getImages:getImages":
            return original(self, args)
        region = args.provider.split("::")[-2].removeprefix("images-") if args.provider else None
        asked.append((region, dict(args.args)))
        images = system if args.args["owners"] == "system" else (own or []) if region == "cn-beijing" else []
        return {"id": "x", "ids": [i["id"] for i in images], "images": images, "names": []}

    monkeypatch.setattr(OfflineMocks, "call", call)
    return asked


RESOLVED = "ubuntu_22_04_uefi_x64_20G_alibase_20240807.vhd"


def test_base_image_is_the_newest_system_image_the_locks_pattern_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # Newest first (most_recent); a BIOS image, a look-alike with a Cyrillic letter and a suffixed name are not taken.
    candidates = ["ubuntu_22_04_x64_20G_alibase_20250101.vhd", "ubuntu_22_04_uefi_x64_20G_аlibase_20250101.vhd",
                  "ubuntu_22_04_uefi_x64_20G_alibase_20250101.vhd\n", RESOLVED]
    asked = system_images(monkeypatch, [{"id": name, "name": name} for name in candidates])
    plan = plan_stack(STACK, SHIPPED_STACKS)
    pipeline = one(plan, PIPELINE)
    assert pipeline.inputs["baseImage"] == RESOLVED
    assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "resolved-at-bake"
    (query,) = [q for _, q in asked if q["owners"] == "system"]
    pattern = load_lock().base_image_entry("alicloud", "cn-wulanchabu").name_regex
    assert (query["nameRegex"], query["mostRecent"], query["status"]) == (pattern, True, "Available")
    assert exports_of_a_plan(monkeypatch)["parent_image"] == RESOLVED  # `images pin` records it


def test_real_run_with_no_matching_system_image_fails_naming_the_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    system_images(monkeypatch, [{"id": "ubuntu_20_04_x64_20G_alibase_20250101.vhd",
                                 "name": "ubuntu_20_04_x64_20G_alibase_20250101.vhd"}])
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(Exception, match="no Available system image matches"):
        exports_of_a_plan(monkeypatch)


def test_unconfirmed_base_image_is_shown_missing_not_invented(unconfirmed_base: None) -> None:
    plan = plan_stack(STACK, SHIPPED_STACKS)
    pipeline = one(plan, PIPELINE)
    assert pipeline.inputs.get("baseImage") is None
    assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "unconfirmed"
    assert "BASE IMAGE UNCONFIRMED" in pipeline.inputs["description"]


def test_pinned_base_image_is_the_pipelines_base(pinned_base: str) -> None:
    pipeline = one(plan_stack(STACK, SHIPPED_STACKS), PIPELINE)
    assert pipeline.inputs["baseImage"] == pinned_base
    assert pipeline.inputs["tags"]["gpufleet:base-image-status"] == "pinned"
    assert "UNCONFIRMED" not in pipeline.inputs["description"]


def exports_of_a_plan(monkeypatch: pytest.MonkeyPatch) -> dict:
    exported: dict = {}

    def export(key: str, value: object) -> None:
        pulumi.Output.from_input(value).apply(lambda resolved: exported.__setitem__(key, resolved))

    monkeypatch.setattr(program.pulumi, "export", export)
    run_program(program.build, load_stack(STACK, SHIPPED_STACKS), project="gpufleet", stack="alicloud-images",
                region="cn-wulanchabu", zones=[])
    return exported


def test_exports_name_the_profile_and_leave_images_empty_until_a_bake(monkeypatch: pytest.MonkeyPatch) -> None:
    exported = exports_of_a_plan(monkeypatch)
    assert exported["images"] == {}  # offline nothing is baked: DescribeImages finds no own image
    assert (exported["profile"], exported["cloud"], exported["parent_image"]) == (PROFILE, "alicloud", None)
    assert exported["image_name"] == "gpufleet-cuda12.8-r580"
    assert exported["pipeline_id"].startswith("ip-") and exported["execution_id"].startswith("exec-")


def test_images_export_only_what_this_execution_made_per_region(monkeypatch: pytest.MonkeyPatch) -> None:
    baked, older = "m-2zeabcdefghij0123456", "m-2zeolderbakeolder012"
    # The mock execution started 2025-01-01T00:00:00Z: the image of an earlier bake of the same name is not taken.
    asked = system_images(monkeypatch, [{"id": RESOLVED, "name": RESOLVED}], own=[
        {"id": older, "name": "gpufleet-cuda12.8-r580_0", "creationTime": "2024-12-31T23:59:00Z"},
        {"id": baked, "name": "gpufleet-cuda12.8-r580_1", "creationTime": "2025-01-01T03:10:00Z"},
    ])
    exported = exports_of_a_plan(monkeypatch)
    assert exported["images"] == {"cn-beijing": baked}  # the copy region found this bake, the build region none
    own = [(region, query) for region, query in asked if query["owners"] == "self"]
    assert sorted(region or "default" for region, _ in own) == ["cn-beijing", "default"]
    for _, query in own:  # the newest own image named after the profile
        wanted = (r"^gpufleet\-cuda12\.8\-r580", "self", True)
        assert (query["nameRegex"], query["owners"], query["mostRecent"]) == wanted


def test_real_run_refuses_an_unconfirmed_base_image_before_any_resource(
        monkeypatch: pytest.MonkeyPatch, unconfirmed_base: None) -> None:
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    seen = registered_types(monkeypatch)
    with pytest.raises(pulumi.RunError) as refused:
        run_program(program.build, load_stack(STACK, SHIPPED_STACKS), project="gpufleet", stack="alicloud-images",
                    region="cn-wulanchabu", zones=[])
    message = str(refused.value)
    assert "base_images.alicloud.cn-wulanchabu: parent_image is null" in message
    assert "aliyun ecs DescribeImages" in message
    assert set(seen) <= {STACK_TYPE}
    with pytest.raises(SpecInvalid, match="parent_image is null"):
        plan_stack(STACK, SHIPPED_STACKS)


def test_real_run_of_a_pinned_base_image_is_not_refused(monkeypatch: pytest.MonkeyPatch, pinned_base: str) -> None:
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    assert one(plan_stack(STACK, SHIPPED_STACKS), PIPELINE).inputs["baseImage"] == pinned_base


# What `pulumi stack output --json --stack alicloud-images` prints, with the DescribeImages ids added to images.
BAKED = {"cn-wulanchabu": "m-0jl8d1ej4mkbbq3ya2lm", "cn-beijing": "m-2zeaq1tbyqs6uyzhs3vx"}
OUTPUTS = {
    "cloud": "alicloud", "profile": PROFILE, "parent_image": BASE, "image_name": "gpufleet-cuda12.8-r580",
    "component_id": "ic-0jl1lmsstd9w5ktx7vfx", "pipeline_id": "ip-0jl5q0p3kzwzbd9gkdjk",
    "execution_id": "exec-0jl7kp9a3i5ilu6xbm2s", "execution_status": "SUCCESS", "images": BAKED,
    "project": "gpufleet", "stack": "alicloud-images",
}


def pin_outputs(tmp_path: Path, outputs: dict) -> tuple[object, Path]:
    lock = tmp_path / "lock.yaml"
    shutil.copyfile(DEFAULT_LOCK_PATH, lock)
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    result = CliRunner().invoke(app, ["images", "pin", "--stack", "alicloud-images", "--lock", str(lock),
                                      "--outputs", str(tmp_path / "outputs.json")])
    return result, lock


def test_pin_changes_only_the_alicloud_ids(tmp_path: Path) -> None:
    result, lock_path = pin_outputs(tmp_path, OUTPUTS)
    assert result.exit_code == 0, result.output
    lock = load_lock(lock_path)
    for region, image in BAKED.items():
        assert lock.image_id(PROFILE, "alicloud", region) == image
        assert lock.image_entry(PROFILE, "alicloud", region).status == "baked"
    assert lock.image_entry("cuda13.0-r580", "alicloud", "cn-beijing").status == "unbaked"
    assert check_lock(lock, lock.driver_branches.branches["r580"].eol) == []
    before, after = DEFAULT_LOCK_PATH.read_text().splitlines(), lock_path.read_text().splitlines()
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert len(changed) == 2 and all("m-" in new and "status: baked" in new for _, new in changed)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"images": {}}, "outputs.images:"),
        ({"images": {"cn-wulanchabu": "ami-0123456789abcdef0"}}, "outputs.images: cn-wulanchabu: 'ami-0123"),
        ({"images": {"cn-hangzhou": "m-0jl8d1ej4mkbbq3ya2lm"}}, "outputs.images.cn-hangzhou: profile"),
        # Only a finished execution's own images (DescribeImagePipelineExecutions statuses): every other status.
        *(({"execution_status": status}, f"outputs.execution_status: the bake is {status!r}, not 'SUCCESS'")
          for status in ("PREPARING", "BUILDING", "TESTING", "DISTRIBUTING", "RELEASING", "PARTITION_SUCCESS",
                         "FAILED", "TEST_FAILED", "CANCELLED", "success", None)),
        ({"execution_id": None}, "outputs.execution_id: missing"),
        ({"images": {"cn-wulanchabu": BASE}}, "outputs.images.cn-wulanchabu: "
                                              f"'{BASE}' is not a custom image id"),
        ({"images": {"cn-wulanchabu": "m-0jl8d1ej4mkbbq3ya2lm\n"}}, "outputs.images: cn-wulanchabu:"),
        ({"stack": "alicloud-images-old"}, "outputs.stack: the outputs are of stack 'alicloud-images-old'"),
    ],
)
def test_pin_refuses_empty_or_malformed_alicloud_outputs(tmp_path: Path, change: dict, message: str) -> None:
    result, lock_path = pin_outputs(tmp_path, {**OUTPUTS, **change})
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert lock_path.read_text() == DEFAULT_LOCK_PATH.read_text()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"parent_image": None, "os": "Ubuntu 22.04"}, "parent_image is null: set status: unconfirmed"),
        ({"parent_image": None, "status": "unconfirmed", "os": "Ubuntu 22.04"}, "and a note"),
        ({"parent_image": BASE, "status": "unconfirmed", "os": "Ubuntu 22.04"}, "status is unconfirmed but"),
    ],
)
def test_lock_base_image_is_null_only_when_unconfirmed_with_a_note(entry: dict, message: str) -> None:
    from gpufleet.lock.model import BaseImage

    with pytest.raises(ValueError, match=re.escape(message)):
        BaseImage.model_validate(entry)
