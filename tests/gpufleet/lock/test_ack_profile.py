"""A lock profile whose driver ACK installs (installed_by: ack): the model takes only what an ACK node is checked
against and refuses every bake field, a baked profile still needs them all; `images check` on the shipped lock notes
its R570 branch instead of failing; nothing is read from a source for it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, LockError, load_lock
from gpufleet.lock.model import BAKE_EXTRAS, BAKE_FIELDS
from gpufleet.lock.needs import image_stack_needs, lock_needs, profile_needs

ACK = "cuda12.8-r570-ack"
BAKED = "cuda12.8-r580"
RAW = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())


def _write(tmp_path: Path, change: Any) -> Path:
    raw = copy.deepcopy(RAW)
    change(raw["profiles"])
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    return path


def test_the_shipped_ack_profile_pins_what_the_node_check_reads_and_nothing_baked() -> None:
    profile = load_lock().profiles[ACK]
    assert (profile.installed_by, profile.driver, profile.fabric_manager, profile.cuda) == (
        "ack", "570.169", "570.169", "12.8")
    assert {field: getattr(profile, field) for field in BAKE_FIELDS} == {
        "nccl": None, "dcgm": None, "apt": None, "driver_pinning_package": None, "kernel_modules": None,
        "cuda_keyring": None, "nodecheck": None, "fabric": None, "images": {}}
    assert profile.agents == {} and profile.kubernetes is None
    assert {"driver", "fabric_manager", "cuda"} <= set(profile.sources)


@pytest.mark.parametrize("field", [*BAKE_FIELDS, *BAKE_EXTRAS])
def test_an_ack_profile_refuses_each_bake_field_naming_it(tmp_path: Path, field: str) -> None:
    def add(profiles: dict[str, Any]) -> None:
        # slurm: a VM profile's section (a Kubernetes node image has none).
        source = "cuda12.8-r580" if field == "slurm" else "cuda12.8-r580-eks1.35"
        profiles[ACK][field] = copy.deepcopy(profiles[source][field])

    with pytest.raises(LockError) as refused:
        load_lock(_write(tmp_path, add))
    text = " ".join(str(refused.value).split())
    assert f"profiles.{ACK}: " in text
    assert f"{field}: installed_by is ack: ACK installs the driver on its own node image" in text


@pytest.mark.parametrize("field", BAKE_FIELDS)
def test_a_baked_profile_requires_each_bake_field(tmp_path: Path, field: str) -> None:
    with pytest.raises(LockError) as refused:
        load_lock(_write(tmp_path, lambda profiles: profiles[BAKED].pop(field)))
    text = " ".join(str(refused.value).split())
    assert f"profiles.{BAKED}: {field}: required where installed_by is bake" in text


def test_a_profile_without_installed_by_is_baked_and_an_ack_one_without_sources_is_refused(tmp_path: Path) -> None:
    assert load_lock().profiles[BAKED].installed_by == "bake"
    with pytest.raises(LockError, match=rf"profiles\.{ACK}\.sources: required field is missing"):
        load_lock(_write(tmp_path, lambda profiles: profiles[ACK].pop("sources")))


def _images_check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["images", "check", "--format", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def test_images_check_on_the_shipped_lock_notes_the_r570_branch_instead_of_failing() -> None:
    code, report = _images_check("--on", "2026-11-28")
    # enroot's .debs take GitHub's release digest once `lock resolve` reads it: unread, a note, not a failure.
    assert code == 0 and report["problems"] == []
    (note,) = [n for n in report["notes"] if n["profile"] == ACK]
    assert note["field"] == "driver"
    assert note["message"] == (
        "driver 570.169 is on branch R570, out of the support matrix: ACK installs this driver (the node pools' "
        "ack.aliyun.com/nvidia-driver-version label, from ACK's driver list) and gpufleet bakes nothing for this "
        "profile (installed_by: ack)")


def test_images_check_of_the_ack_profile_alone_reads_no_bake_fact() -> None:
    code, report = _images_check("--on", "2026-11-28", "--profile", ACK)
    assert code == 0 and report["problems"] == []
    assert [(n["profile"], n["field"]) for n in report["notes"]] == [(ACK, "driver")]


def test_an_ack_profile_whose_driver_ack_does_not_list_fails_images_check(tmp_path: Path) -> None:
    def unlisted(profiles: dict[str, Any]) -> None:
        profiles[ACK]["driver"] = profiles[ACK]["fabric_manager"] = "580.126.16"

    code, report = _images_check("--on", "2026-11-28", "--lock", str(_write(tmp_path, unlisted)), "--profile", ACK)
    assert code == 1
    assert [(p["profile"], p["field"]) for p in report["problems"]] == [(ACK, "driver")]
    assert report["problems"][0]["message"].startswith(
        "installed_by ack: NVIDIA driver 580.126.16 is not in ACK's driver list")


def test_an_ack_profile_is_still_held_to_its_fabric_manager_and_cuda_minimum(tmp_path: Path) -> None:
    def drift(profiles: dict[str, Any]) -> None:
        profiles[ACK]["fabric_manager"] = "570.133.20"
        profiles[ACK]["cuda"] = "12.9"

    code, report = _images_check("--on", "2026-11-28", "--lock", str(_write(tmp_path, drift)), "--profile", ACK)
    assert code == 1
    assert {(p["field"], p["message"]) for p in report["problems"]} == {
        ("fabric_manager", "fabric manager 570.133.20 differs from driver 570.169: it must equal the driver exactly or "
                           "it refuses to start"),
        ("driver", "driver 570.169 is below the minimum 575.51.03 for CUDA 12.9")}


def test_the_ack_profile_needs_nothing_read_from_a_source() -> None:
    lock = load_lock()
    assert profile_needs(lock.profiles[ACK]) == []
    assert image_stack_needs(lock, ACK, "alicloud", "cn-wulanchabu") == []
    assert not [need for need in lock_needs(lock) if any(ACK in field for field in need.fields)]
    assert profile_needs(lock.profiles[BAKED])  # a baked profile's bake still reads its facts


def test_no_install_env_is_rendered_for_the_ack_profile() -> None:
    from gpufleet.lock import render_install_env

    with pytest.raises(ValueError, match=rf"profiles\.{ACK}: installed_by ack: ACK installs its driver, nothing is "):
        render_install_env(load_lock().profiles[ACK], "alicloud")
