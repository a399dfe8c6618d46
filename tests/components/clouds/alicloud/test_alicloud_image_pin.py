"""`gpufleet images pin` of the alicloud-images stack's outputs: each boot mode's bake is written to its own entry
of the profile's images.alicloud, and nothing else in the lock changes; malformed or unfinished bakes are refused, and
so is an id its own execution did not make (what the execution names: tests/sources/test_sources_alicloud_execution.py,
here the CLI's reader answers as the recorded executions do)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from alicloud_boot_lock import BIOS_BASE, UEFI_BASE
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.cli import images as images_cli
from gpufleet.lock import DEFAULT_LOCK_PATH, check_lock, load_lock

PROFILE = "cuda12.8-r580"
UEFI_BAKED = {"cn-wulanchabu": "m-0jl8d1ej4mkbbq3ya2lm", "cn-beijing": "m-2zeaq1tbyqs6uyzhs3vx"}
BIOS_BAKED = {"cn-wulanchabu": "m-0jl3bv2ln8m1rfqkvx7c", "cn-beijing": "m-2ze6y0gd1p3y5hc8s1kz"}


def bake(images: dict[str, str], parent: str, mode: str, execution: str) -> dict:
    return {"images": images, "parent_image": parent, "image_name": f"gpufleet-{PROFILE}-{mode}",
            "component_id": "ic-0jl1lmsstd9w5ktx7vfx", "pipeline_id": "ip-0jl5q0p3kzwzbd9gkdjk",
            "execution_id": execution, "execution_status": "SUCCESS"}


# What `pulumi stack output --json --stack alicloud-images` prints, with the DescribeImages ids added to images.
OUTPUTS = {
    "cloud": "alicloud", "profile": PROFILE, "project": "gpufleet", "stack": "alicloud-images",
    "regions": ["cn-wulanchabu", "cn-beijing"],
    "boot_modes": {"uefi": bake(UEFI_BAKED, UEFI_BASE, "uefi", "exec-0jl7kp9a3i5ilu6xbm2s"),
                   "bios": bake(BIOS_BAKED, BIOS_BASE, "bios", "exec-0jl2c8wq5x1m4nbz7t0d")},
}


# What each execution made, as DescribeImagePipelineExecutions and its copies' exact name say.
MADE = {"exec-0jl7kp9a3i5ilu6xbm2s": UEFI_BAKED, "exec-0jl2c8wq5x1m4nbz7t0d": BIOS_BAKED}


@pytest.fixture(autouse=True)
def executions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images_cli, "_execution_images", lambda bake: MADE.get(bake.execution_id, {}))


def pin_outputs(tmp_path: Path, outputs: dict) -> tuple[object, Path]:
    lock = tmp_path / "lock.yaml"
    shutil.copyfile(DEFAULT_LOCK_PATH, lock)
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    result = CliRunner().invoke(app, ["images", "pin", "--stack", "alicloud-images", "--lock", str(lock),
                                      "--outputs", str(tmp_path / "outputs.json")])
    return result, lock


def test_pin_records_each_boot_modes_ids_in_its_entry(tmp_path: Path) -> None:
    result, lock_path = pin_outputs(tmp_path, OUTPUTS)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert f"pinned {PROFILE} alicloud/cn-beijing (bios): {BIOS_BAKED['cn-beijing']} (was unbaked)" in said
    lock = load_lock(lock_path)
    for mode, baked, base in (("uefi", UEFI_BAKED, UEFI_BASE), ("bios", BIOS_BAKED, BIOS_BASE)):
        for region, image in baked.items():
            entry = lock.image_entry(PROFILE, "alicloud", region, mode)
            assert (entry.id, entry.status, entry.base_image) == (image, "baked", base)
    assert lock.image_entry("cuda13.0-r580", "alicloud", "cn-beijing", "bios").status == "unbaked"
    assert check_lock(lock, lock.driver_branches.branches["r580"].eol) == []
    before, after = DEFAULT_LOCK_PATH.read_text().splitlines(), lock_path.read_text().splitlines()
    changed = [new for old, new in zip(before, after, strict=False) if old != new]
    # Each of the four one-line entries gains its id, status and base image, on its own line; nothing else moves.
    assert len(after) == len(before)
    assert len(changed) == 4 and all("m-" in new and "status: baked" in new and "base_image:" in new
                                     for new in changed)


def test_pin_of_one_boot_mode_leaves_the_other_unbaked(tmp_path: Path) -> None:
    result, lock_path = pin_outputs(tmp_path, {**OUTPUTS, "boot_modes": {"bios": OUTPUTS["boot_modes"]["bios"]}})
    assert result.exit_code == 0, result.output
    lock = load_lock(lock_path)
    assert lock.image_id(PROFILE, "alicloud", "cn-wulanchabu", "bios") == BIOS_BAKED["cn-wulanchabu"]
    assert lock.image_entry(PROFILE, "alicloud", "cn-wulanchabu", "uefi").status == "unbaked"


def changed_bake(mode: str, **change: object) -> dict:
    outputs = copy.deepcopy(OUTPUTS)
    outputs["boot_modes"][mode].update(change)
    return outputs


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (changed_bake("uefi", images={}), "outputs.boot_modes.uefi.images:"),
        (changed_bake("bios", images={"cn-wulanchabu": "ami-0123456789abcdef0"}),
         "outputs.boot_modes.bios.images: cn-wulanchabu: 'ami-0123"),
        (changed_bake("uefi", images={"cn-hangzhou": "m-0jl8d1ej4mkbbq3ya2lm"}),
         "outputs.boot_modes.uefi.images.cn-hangzhou: profile 'cuda12.8-r580' has no alicloud entry"),
        # Only a finished execution's own images (DescribeImagePipelineExecutions statuses): every other status.
        *((changed_bake("bios", execution_status=status),
           f"outputs.boot_modes.bios.execution_status: the bake is {status!r}, not 'SUCCESS'")
          for status in ("BUILDING", "DISTRIBUTING", "PARTITION_SUCCESS", "FAILED", "TEST_FAILED", "success", None)),
        (changed_bake("uefi", execution_id=None), "outputs.boot_modes.uefi.execution_id: missing"),
        ({k: v for k, v in OUTPUTS.items() if k != "regions"}, "outputs.boot_modes.uefi.regions: missing"),
        # The name prefix and time bound of the stack's lookup also match a later execution's image: refused.
        (changed_bake("uefi", images={**UEFI_BAKED, "cn-beijing": "m-2zelaterexecution001"}),
         "outputs.boot_modes.uefi.images.cn-beijing: m-2zelaterexecution001 is not an image execution "
         f"exec-0jl7kp9a3i5ilu6xbm2s made (it made {UEFI_BAKED['cn-beijing']})"),
        (changed_bake("uefi", images={"cn-wulanchabu": UEFI_BASE}),
         f"outputs.boot_modes.uefi.images.cn-wulanchabu: '{UEFI_BASE}' is not a custom image id"),
        ({**OUTPUTS, "boot_modes": {"legacy": OUTPUTS["boot_modes"]["bios"]}},
         "outputs.boot_modes: expected boot mode -> bake (uefi, bios)"),
        ({**OUTPUTS, "stack": "alicloud-images-old"}, "outputs.stack: the outputs are of stack 'alicloud-images-old'"),
        # A bake of no boot mode (the flat outputs of one image) cannot fill entries kept per boot mode.
        ({**{k: v for k, v in OUTPUTS.items() if k != "boot_modes"}, **OUTPUTS["boot_modes"]["uefi"]},
         "outputs.images.cn-beijing: the bake is of boot mode none, but profile 'cuda12.8-r580' keeps images for "
         "uefi, bios in alicloud/cn-beijing"),
    ],
)
def test_pin_refuses_empty_malformed_or_unfinished_bakes(tmp_path: Path, outputs: dict, message: str) -> None:
    result, lock_path = pin_outputs(tmp_path, outputs)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert lock_path.read_text() == DEFAULT_LOCK_PATH.read_text()
