"""Each GPU's NVLink fabric registration as NVML reports it (nvmlDeviceGetGpuFabricInfoV, nvidia-ml-py 13.615.71
pynvml.py:7193-7196, 7265-7278, 7327-7331). An NVSwitch GPU of the Hopper generation or newer registers with the
fabric manager at boot: until its state is COMPLETED with status NVML_SUCCESS every CUDA context on it fails (cuInit
answers CUDA_ERROR_SYSTEM_NOT_READY). Older GPUs and GPUs without NVSwitch answer NOT_SUPPORTED: they report nothing
and the CUDA probe (cuda.py) covers them."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from types import ModuleType

STATES = ("NOT_STARTED", "IN_PROGRESS", "COMPLETED")
"""The NVML_GPU_FABRIC_STATE_<name> a GPU reporting a fabric can be in."""


@dataclass(frozen=True)
class FabricReading:
    state: str
    """One of STATES, or 'state N' for a value this nvidia-ml-py does not name."""
    status: int
    """The registration's nvmlReturn_t once COMPLETED: NVML_SUCCESS (0), or why it failed."""


def read_fabric(nvml: ModuleType, handle: object) -> FabricReading | None:
    """None where the GPU does not report a fabric (no NVSwitch, or older than Hopper; a driver without the call)."""
    info = nvml.c_nvmlGpuFabricInfoV_t()
    try:
        nvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound):
        return None
    if info.state == nvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED:
        return None
    names = {getattr(nvml, f"NVML_GPU_FABRIC_STATE_{name}"): name for name in STATES}
    return FabricReading(state=names.get(info.state, f"state {info.state}"), status=info.status)


def fabric_problem(reading: FabricReading) -> str | None:
    """Why the GPU cannot run CUDA work over the fabric yet; None when it can (NVML_SUCCESS is 0 in nvml.h)."""
    if reading.state != "COMPLETED":
        return reading.state
    if reading.status != 0:
        return f"COMPLETED with status {reading.status}"
    return None
