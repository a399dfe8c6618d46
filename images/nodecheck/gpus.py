"""What NVML reports about the node's GPUs. pynvml is imported only when no fake module is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .ecc import EccReading, read_ecc
from .fabric import FabricReading, read_fabric


@dataclass(frozen=True)
class GpuReport:
    driver: str | None
    names: list[str] = field(default_factory=list)
    # device index -> its memory error counters (ecc.py).
    ecc: dict[int, EccReading] = field(default_factory=dict)
    # device index -> its NVLink fabric registration; None where the GPU reports none (fabric.py).
    fabric: dict[int, FabricReading | None] = field(default_factory=dict)
    # device index -> persistence mode on (nvmlDeviceGetPersistenceMode == NVML_FEATURE_ENABLED).
    persistence: dict[int, bool] = field(default_factory=dict)
    # Read only where MIG is expected: device index -> MIG mode current (nvmlDeviceGetMigMode) is enabled, and
    # -> MIG devices present (nvmlDeviceGetMigDeviceHandleByIndex over nvmlDeviceGetMaxMigDeviceCount slots).
    mig_enabled: dict[int, bool] = field(default_factory=dict)
    mig_devices: dict[int, int] = field(default_factory=dict)
    error: str | None = None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _mig_devices(nvml: ModuleType, handle: object) -> int:
    found = 0
    for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
        try:
            nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError_NotFound:  # an empty slot (nvml.h: NVML_ERROR_NOT_FOUND)
            continue
        found += 1
    return found


def _mig(nvml: ModuleType, handles: list[object]) -> dict[str, dict[int, Any]]:
    """GpuReport's MIG fields; a GPU whose MIG mode is off has no MIG devices to look for."""
    enabled = {i: nvml.nvmlDeviceGetMigMode(h)[0] == nvml.NVML_DEVICE_MIG_ENABLE for i, h in enumerate(handles)}
    devices = {i: _mig_devices(nvml, h) if enabled[i] else 0 for i, h in enumerate(handles)}
    return {"mig_enabled": enabled, "mig_devices": devices}


def read_gpus(nvml: ModuleType | None = None, mig: bool = False) -> GpuReport:
    """Query NVML; any NVML failure becomes GpuReport.error instead of a traceback. `mig`: read MIG mode and
    devices too (only where the expectation has MIG, so a whole-GPU node is read as before)."""
    if nvml is None:
        try:
            import pynvml as nvml  # noqa: PLC0415 - lazy: the node check must start without NVML
        except ImportError as err:
            return GpuReport(driver=None, error=f"nvidia-ml-py is not installed ({err})")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return GpuReport(driver=None, error=f"NVML did not initialise: {err}")
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        return GpuReport(
            driver=driver,
            names=[_text(nvml.nvmlDeviceGetName(h)) for h in handles],
            ecc={i: read_ecc(nvml, h) for i, h in enumerate(handles)},
            fabric={i: read_fabric(nvml, h) for i, h in enumerate(handles)},
            persistence={i: nvml.nvmlDeviceGetPersistenceMode(h) == nvml.NVML_FEATURE_ENABLED
                         for i, h in enumerate(handles)},
            **(_mig(nvml, handles) if mig else {}),
        )
    except nvml.NVMLError as err:
        return GpuReport(driver=None, error=f"NVML query failed: {err}")
    finally:
        nvml.nvmlShutdown()
