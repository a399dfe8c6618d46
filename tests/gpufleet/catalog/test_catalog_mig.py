"""The catalog's MIG facts (gpufleet/catalog/mig.yaml): every catalog GPU has them, with a source; the profiles are
mig-parted's, read back from its default config; a malformed file is refused by field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.catalog import load_catalog, load_mig_facts
from gpufleet.cli import app
from gpufleet.stackfile import SpecInvalid

FACTS = load_mig_facts()


def test_every_catalog_gpu_states_whether_it_has_mig() -> None:
    missing = sorted({f"{i.gpu.model} {i.gpu.memory_gb:g} GB ({i.name})"
                      for i in load_catalog().instances() if FACTS.of(i.gpu) is None})
    assert not missing, f"add these GPUs to gpufleet/catalog/mig.yaml: {missing}"


@pytest.mark.parametrize(("model", "memory", "mig"), [
    ("A100", 40, True), ("A100", 80, True), ("A30", 24, True), ("H100", 80, True), ("H200", 141, True),
    ("B200", 180, True), ("L40S", 48, False), ("L4", 24, False), ("A10G", 24, False),
])
def test_mig_per_nvidias_supported_gpus(model: str, memory: float, mig: bool) -> None:
    gpu = next(g for g in FACTS.gpus if g.model == model and g.memory_gb == memory)
    assert gpu.mig is mig and "mig-guide" in gpu.source


@pytest.mark.parametrize(("model", "memory", "profile", "devices"), [
    ("A100", 40, "all-1g.5gb", {"1g.5gb": 7}),
    ("A100", 40, "all-1g.10gb", {"1g.10gb": 4}),
    ("A100", 80, "all-1g.10gb", {"1g.10gb": 7}),
    ("H100", 80, "all-3g.40gb", {"3g.40gb": 2}),
    ("H200", 141, "all-balanced", {"3g.71gb": 1, "2g.35gb": 1, "1g.18gb": 2}),
])
def test_devices_as_mig_parted_creates_them_largest_first(model: str, memory: float, profile: str,
                                                          devices: dict[str, int]) -> None:
    gpu = next(g for g in FACTS.gpus if g.model == model and g.memory_gb == memory)
    assert gpu.devices(profile) == devices
    assert list(gpu.devices(profile)) == list(devices)


def test_strategy_follows_the_devices() -> None:
    assert FACTS.strategy("all-1g.10gb") == "single"
    assert FACTS.strategy("all-balanced") == "mixed"
    assert FACTS.strategy("all-9g.1gb") is None


def test_catalog_json_lists_the_gpus_mig_profiles() -> None:
    rows = {r["name"]: r for r in json.loads(CliRunner().invoke(app, ["catalog", "--format", "json"]).output)}
    assert "all-1g.10gb" in rows["p5.48xlarge"]["gpu"]["mig_profiles"]
    assert rows["g6e.48xlarge"]["gpu"]["mig_profiles"] == []


def test_catalog_table_has_a_mig_column(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.cli.app import out

    monkeypatch.setattr(out, "_width", 200)  # the console is made once per process: wide enough for one line a row
    output = CliRunner().invoke(app, ["catalog", "--cloud", "aws", "--gpu", "L40S"]).output
    header = next(line for line in output.splitlines() if "cloud" in line)
    row = next(line for line in output.splitlines() if "g6e.48xlarge" in line)
    cells = [c.strip() for c in header.split("┃")], [c.strip() for c in row.split("│")]
    assert cells[1][cells[0].index("MIG")] == "no"


GOOD = """gpus:
  - model: X1
    memory_gb: 80
    mig: true
    source: a test
    profiles:
      all-1g.10gb: {1g.10gb: 7}
"""


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "mig.yaml"
    path.write_text(text)
    return load_mig_facts.__wrapped__(path)


def test_a_well_formed_file_loads(tmp_path: Path) -> None:
    assert _load(tmp_path, GOOD).gpus[0].devices("all-1g.10gb") == {"1g.10gb": 7}


@pytest.mark.parametrize(("change", "words"), [
    (("all-1g.10gb:", "1g.10gb-all:"), "not a mig-parted config name"),
    (("{1g.10gb: 7}", "{1g.10gb: 8}"), "more than 7 MIG devices"),
    (("mig: true", "mig: false"), "lists none"),
    (("{1g.10gb: 7}", "{10gb: 7}"), "device profiles like 1g.10gb"),
])
def test_a_malformed_file_is_refused(tmp_path: Path, change: tuple[str, str], words: str) -> None:
    with pytest.raises(SpecInvalid) as invalid:
        _load(tmp_path, GOOD.replace(*change))
    assert words in str(invalid.value)


def test_a_gpu_listed_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid, match="listed twice: X1 80 GB"):
        _load(tmp_path, GOOD + GOOD.removeprefix("gpus:\n"))


def recorded_gpu_instance_profiles(path: Path) -> dict[str, int]:
    """`nvidia-smi mig -lgip`'s table as a GPU printed it: profile name -> its total instances (Free/Total)."""
    rows = re.findall(r"^\|\s+\d+\s+MIG (\S+)\s+\d+\s+\d+/(\d+)\s", path.read_text(encoding="utf-8"), re.MULTILINE)
    return {name: int(total) for name, total in rows}


def test_the_h200_profiles_are_what_a_real_h200_offers() -> None:
    # Recorded on a lent H200 (tests/device/node_check_on_gpu.sh); the +me profile is one the catalog leaves out.
    offered = recorded_gpu_instance_profiles(Path(__file__).parents[2] / "data" / "device" / "h200-mig-lgip.txt")
    assert offered["1g.18gb"] == 7 and "1g.18gb+me" in offered
    h200 = next(g for g in FACTS.gpus if g.model == "H200")
    for name, devices in h200.profiles.items():
        unknown = sorted(set(devices) - set(offered))
        assert not unknown, f"{name}: {unknown} are no GPU instance profiles of a real H200"
        if len(devices) == 1:  # all-<profile>: as many as the GPU offers of it
            ((device, count),) = devices.items()
            assert count == offered[device], f"{name}: {count} x {device}, the GPU offers {offered[device]}"
