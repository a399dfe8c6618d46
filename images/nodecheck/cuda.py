"""A CUDA start as a job makes it: cuInit and cuDeviceGetCount through the driver's libcuda.so.1 (ctypes; the node
check needs no CUDA toolkit). NVML answers where CUDA cannot: an NVSwitch node whose fabric manager never registered
the fabric lists every GPU in NVML while each cuInit fails with CUDA_ERROR_SYSTEM_NOT_READY."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

LIBCUDA = "libcuda.so.1"
# CUresult values (cuda.h, enum cudaError_enum).
CUDA_SUCCESS = 0
CUDA_ERROR_SYSTEM_NOT_READY = 802
"""cuda.h: "the system is not yet ready to start any CUDA work ... all required driver daemons are actively running":
on NVSwitch systems, the fabric manager."""


@dataclass(frozen=True)
class CudaReading:
    error: str | None
    """Why CUDA did not start: the library could not load, or cuInit/cuDeviceGetCount's CUresult; None: it started."""
    devices: int | None = None
    """cuDeviceGetCount once cuInit succeeded."""


def _error(lib: ctypes.CDLL, call: str, result: int) -> str:
    name = ctypes.c_char_p()
    lib.cuGetErrorName(result, ctypes.byref(name))
    text = f"{call} returned {result} ({name.value.decode() if name.value else 'unknown'})"
    if result == CUDA_ERROR_SYSTEM_NOT_READY:
        text += ": the NVSwitch fabric is not ready (is the fabric manager running?)"
    return text


def probe_cuda(library: str = LIBCUDA) -> CudaReading:
    try:
        lib = ctypes.CDLL(library)
    except OSError as err:
        return CudaReading(error=f"cannot load {library}: {err}")
    result = lib.cuInit(0)
    if result != CUDA_SUCCESS:
        return CudaReading(error=_error(lib, "cuInit", result))
    count = ctypes.c_int()
    result = lib.cuDeviceGetCount(ctypes.byref(count))
    if result != CUDA_SUCCESS:
        return CudaReading(error=_error(lib, "cuDeviceGetCount", result))
    return CudaReading(error=None, devices=count.value)
