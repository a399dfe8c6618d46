"""The node check reads persistence mode from NVML for every GPU (nvmlDeviceGetPersistenceMode, NVML_FEATURE_ENABLED
= 1 as nvidia-ml-py defines it) and fails a node where one GPU runs without it. NVML is a fake module here."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fake_nvml import FakeGpu, fake_nvml

from images.nodecheck.checks import gpu_checks
from images.nodecheck.expect import Expectation, InstanceExpectation
from images.nodecheck.gpus import read_gpus


def _nvml(persistence: list[int]) -> SimpleNamespace:
    return fake_nvml([FakeGpu(persistence=mode) for mode in persistence])


EXPECT = Expectation(profile="cuda12.8-r580", driver="580.126.16", cuda="12.8.1", fabric_manager="580.126.16",
                     scratch_mount=None, instance_types={})
INSTANCE = InstanceExpectation(gpu_model="H100", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=32)


@pytest.mark.parametrize(("modes", "ok", "found"), [
    ([1] * 8, True, "on for 8 of 8"),
    ([1, 1, 0, 1, 1, 1, 1, 0], False, {"off": [2, 7]}),
])
def test_persistence_mode_must_be_on_for_every_gpu(modes, ok, found):
    checks = {c.name: c for c in gpu_checks(EXPECT, INSTANCE, read_gpus(_nvml(modes)))}
    assert checks["persistence_mode"].ok is ok and checks["persistence_mode"].found == found
    assert checks["gpu_count"].ok and checks["driver_version"].ok
