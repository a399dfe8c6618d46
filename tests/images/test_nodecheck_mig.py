"""The node check on MIG groups: MIG mode on every GPU and the boot's MIG devices on each, read from NVML
(nvmlDeviceGetMigMode, nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetMigDeviceHandleByIndex raising NotFound on an
empty slot, as nvidia-ml-py does). A whole-GPU expectation never asks NVML about MIG. NVML is a fake module here."""

from __future__ import annotations

from types import SimpleNamespace

import pynvml
import pytest
from fake_nvml import FakeGpu, fake_nvml

from images.nodecheck.checks import gpu_checks
from images.nodecheck.expect import Expectation, ExpectationError, InstanceExpectation, parse_expectation
from images.nodecheck.gpus import read_gpus


class _NotFound(Exception):
    pass


def _nvml(mig_modes: list[int] | None = None, devices: list[int] | None = None) -> SimpleNamespace:
    """Two A100s; with `mig_modes`, the MIG functions too (each GPU's current mode, devices present)."""
    count = len(mig_modes) if mig_modes is not None else 2
    fake = fake_nvml([FakeGpu(name="NVIDIA A100-SXM4-40GB", fabric_state=None) for _ in range(count)])
    fake.NVMLError_NotFound = _NotFound
    if mig_modes is not None:
        present = devices or [0] * count

        def handle_by_index(gpu: int, slot: int) -> tuple[int, int]:
            if slot >= present[gpu]:
                raise _NotFound
            return gpu, slot

        fake.NVML_DEVICE_MIG_ENABLE = pynvml.NVML_DEVICE_MIG_ENABLE
        fake.nvmlDeviceGetMigMode = lambda h: [mig_modes[h], mig_modes[h]]
        fake.nvmlDeviceGetMaxMigDeviceCount = lambda h: 7
        fake.nvmlDeviceGetMigDeviceHandleByIndex = handle_by_index
    return fake


EXPECT = Expectation(profile="cuda12.8-r580", driver="580.126.16", cuda="12.8.1", fabric_manager="580.126.16",
                     scratch_mount=None, instance_types={})
WHOLE = InstanceExpectation(gpu_model="A100", gpu_count=2, nvswitch=False, fabric="none", fabric_interfaces=0)
MIG = InstanceExpectation(gpu_model="A100", gpu_count=2, nvswitch=False, fabric="none", fabric_interfaces=0,
                          mig_devices=4)
ON, OFF = pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_DISABLE


def _checks(inst: InstanceExpectation, nvml: SimpleNamespace) -> dict[str, object]:
    return {c.name: c for c in gpu_checks(EXPECT, inst, read_gpus(nvml, mig=inst.mig_devices > 0))}


def test_every_gpu_with_its_devices_passes():
    checks = _checks(MIG, _nvml([ON, ON], [4, 4]))
    assert checks["mig_mode"].ok and checks["mig_devices"].ok
    assert checks["mig_devices"].found == {"total": 8}
    assert checks["gpu_count"].ok, "the node check still counts the physical GPUs"


def test_a_gpu_with_mig_off_fails():
    checks = _checks(MIG, _nvml([ON, OFF], [4, 0]))
    assert not checks["mig_mode"].ok and checks["mig_mode"].found == {"off": [1]}
    assert not checks["mig_devices"].ok and checks["mig_devices"].found == {"total": 4, "per_gpu": {"1": 0}}


def test_a_gpu_missing_devices_fails():
    checks = _checks(MIG, _nvml([ON, ON], [4, 3]))
    assert checks["mig_mode"].ok and not checks["mig_devices"].ok
    assert checks["mig_devices"].expected == {"per_gpu": 4, "total": 8}


def test_a_whole_gpu_node_is_checked_as_before_without_asking_about_mig():
    # The fake has no MIG functions: a MIG query would fail the read.
    checks = _checks(WHOLE, _nvml())
    assert "mig_mode" not in checks and "mig_devices" not in checks
    assert all(c.ok for c in checks.values())


def _raw(**instance: object) -> dict[str, object]:
    body = {"gpu_model": "A100", "gpu_count": 8, "nvswitch": True, "fabric": "none", "fabric_interfaces": 0}
    return {"profile": "p", "driver": "d", "cuda": "c", "fabric_manager": "f", "scratch_mount": None,
            "instance_types": {"p4d.24xlarge": {**body, **instance}}}


def test_the_expectation_reads_mig_devices_and_defaults_to_none():
    assert parse_expectation(_raw()).instance_types["p4d.24xlarge"].mig_devices == 0
    assert parse_expectation(_raw(mig_devices=7)).instance_types["p4d.24xlarge"].mig_devices == 7


@pytest.mark.parametrize("value", [8, -1, True, "4"])
def test_a_bad_mig_devices_names_the_field(value):
    with pytest.raises(ExpectationError, match=r"instance_types\.p4d\.24xlarge\.mig_devices"):
        parse_expectation(_raw(mig_devices=value))
