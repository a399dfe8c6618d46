"""`images check` ties each catalog GPU's architecture to the profile's kernel module flavour: the open modules
drive Turing and newer, so a catalog V100 (Volta) under an open-module profile fails the check, and a Blackwell under
proprietary ones does too."""

from __future__ import annotations

import copy
from datetime import date
from pathlib import Path

import libyaml_files

from gpufleet.catalog import DATA_DIR, load_catalog
from gpufleet.lock import DEFAULT_LOCK_PATH, check_lock
from gpufleet.lock.model import Lock

ON = date(2026, 1, 1)
V100 = {"gpu": {"model": "V100", "architecture": "volta", "count": 8, "memory_gb": 16}, "vcpu": 64,
        "memory_gib": 256, "fabric": {"kind": "none", "interfaces": 0}, "nvswitch": False,
        "source": "gpu-families gn6v table"}


def _catalog(tmp_path: Path, cloud: str, rows: dict[str, dict]) -> Path:
    for path in DATA_DIR.glob("*.yaml"):
        raw = libyaml_files.load(path.read_text())
        if raw["cloud"] == cloud:
            raw["instances"].update(rows)
        (tmp_path / path.name).write_text(libyaml_files.dump(raw))
    return tmp_path


def _problems(tmp_path: Path, rows: dict[str, dict], modules: str = "open") -> list[str]:
    raw = copy.deepcopy(libyaml_files.load(DEFAULT_LOCK_PATH.read_text()))
    for body in raw["profiles"].values():
        if body.get("installed_by", "bake") == "bake":  # ACK chooses its own driver's modules
            body["kernel_modules"] = modules
    catalog = load_catalog(_catalog(tmp_path, "alicloud", rows))
    return [str(p) for p in check_lock(Lock.model_validate(raw), ON, profile="cuda12.8-r580", catalog=catalog)
            if p.field == "kernel_modules"]


def test_the_shipped_catalog_holds_only_gpus_the_shipped_modules_drive(tmp_path):
    assert _problems(tmp_path, {}) == []


def test_a_v100_under_the_open_modules_fails_the_check(tmp_path):
    assert _problems(tmp_path, {"ecs.gn6v-c8g1.16xlarge": V100}) == [
        "cuda12.8-r580: kernel_modules: alicloud ecs.gn6v-c8g1.16xlarge has V100 (volta), which the open kernel "
        "modules do not drive: drop it from the catalog or bake a profile whose modules do"]


def test_proprietary_modules_cannot_drive_the_catalogs_blackwell_or_pass_a_v100(tmp_path):
    b200 = {**V100, "gpu": {"model": "B200", "architecture": "blackwell", "count": 8}}
    found = _problems(tmp_path, {"ecs.gn6v-c8g1.16xlarge": V100, "ecs.example-b200": b200}, modules="proprietary")
    catalog = [p for p in found if " has " in p]
    assert [p.split(" has ")[0] for p in catalog] == ["cuda12.8-r580: kernel_modules: alicloud ecs.example-b200"]
    # The installer installs nvidia-open only, so a proprietary profile is refused until it honours the flavour.
    assert [p for p in found if " has " not in p] == [
        "cuda12.8-r580: kernel_modules: proprietary: the installer installs the open modules only "
        "(images/install/gpu-stack.sh: nvidia-open)"]
