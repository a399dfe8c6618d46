"""`images check` judges the apt pins the bake installs against the profile's own labels."""

from __future__ import annotations

import copy
from datetime import date

import libyaml_files
import pytest

from gpufleet.lock import DEFAULT_LOCK_PATH, check_lock
from gpufleet.lock.model import Lock

PROFILE = "cuda12.8-r580"
ON = date(2026, 1, 1)


def problems_after(change: dict[str, str | None]) -> list[str]:
    """check_lock's problems for the shipped lock with PROFILE's apt pins changed (None removes a pin)."""
    raw = copy.deepcopy(libyaml_files.load(DEFAULT_LOCK_PATH.read_text()))
    apt = raw["profiles"][PROFILE]["apt"]
    for package, version in change.items():
        if version is None:
            apt.pop(package)
        else:
            apt[package] = version
    return [f"{p.field}: {p.message}" for p in check_lock(Lock.model_validate(raw), ON, profile=PROFILE)]


def test_shipped_pins_agree_with_their_profiles() -> None:
    assert problems_after({}) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"nvidia-fabricmanager": "570.133.20-1"}, "apt.nvidia-fabricmanager: 570.133.20-1 is 570.133.20, the driver"),
        ({"libnccl2": "2.28.9-1+cuda13.0"}, "apt.libnccl2: 2.28.9-1+cuda13.0 is not NCCL 2.28.9 built for CUDA 12"),
        ({"libnccl-dev": "2.27.3-1+cuda12.9"}, "apt.libnccl-dev: 2.27.3-1+cuda12.9 is not NCCL 2.28.9"),
        ({"libnccl2": "2.28.9-1"}, "apt.libnccl2: 2.28.9-1 is not NCCL 2.28.9 built for CUDA 12"),
        # r580's user-mode driver is CUDA 13: DCGM's flavour follows it, not the toolkit's 12.8.
        ({"datacenter-gpu-manager-4-cuda13": None, "datacenter-gpu-manager-4-cuda12": "1:4.5.2-1"},
         "apt.datacenter-gpu-manager-4-cuda12: 1:4.5.2-1 is DCGM's CUDA 12 flavour; driver 580.126.16 runs CUDA 13"),
        ({"datacenter-gpu-manager-4-core": "1:4.4.0-1"}, "apt.datacenter-gpu-manager-4-core: 1:4.4.0-1 is 4.4.0"),
        ({"cuda-toolkit-12-8": "12.9.0-1"}, "apt.cuda-toolkit-12-8: 12.9.0-1 is not CUDA 12.8.1"),
    ],
)
def test_a_pin_that_contradicts_its_profile_is_a_problem_naming_the_pin(change: dict, expected: str) -> None:
    assert any(problem.startswith(expected) for problem in problems_after(change)), problems_after(change)


def test_a_pinning_package_of_another_driver_is_a_problem() -> None:
    raw = copy.deepcopy(libyaml_files.load(DEFAULT_LOCK_PATH.read_text()))
    raw["profiles"][PROFILE]["driver_pinning_package"] = "nvidia-driver-pinning-570.133.20"
    found = [f"{p.field}: {p.message}" for p in check_lock(Lock.model_validate(raw), ON, profile=PROFILE)]
    assert found == ["driver_pinning_package: nvidia-driver-pinning-570.133.20 does not pin driver 580.126.16"]
