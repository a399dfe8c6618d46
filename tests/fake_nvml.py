"""A stand-in for pynvml with nvidia-ml-py's own names, constants, error classes and structures, answering for GPUs
a test describes (no NVML library is loaded). Each GPU is healthy unless told: every ECC counter 0, no row remap
pending or failed, persistence on, and its fabric as `fabric_state` says (NOT_SUPPORTED: a GPU without NVSwitch)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml


def nvml_error(code: int) -> pynvml.NVMLError:
    """The exception class nvidia-ml-py raises for `code` (pynvml.NVMLError maps it to its subclass)."""
    return pynvml.NVMLError(code)


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    persistence: int = pynvml.NVML_FEATURE_ENABLED
    # None: nvmlDeviceGetGpuFabricInfoV answers NVML_ERROR_NOT_SUPPORTED (GPUs before Hopper)
    fabric_state: int | None = pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
    fabric_status: int = pynvml.NVML_SUCCESS
    # (error type, counter type) -> nvmlDeviceGetTotalEccErrors
    total_ecc: dict[tuple[int, int], int] = field(default_factory=dict)
    # (error type, counter type, location) -> nvmlDeviceGetMemoryErrorCounter
    memory_errors: dict[tuple[int, int, int], int] = field(default_factory=dict)
    # nvmlDeviceGetRemappedRows: (corrected rows, uncorrected rows, pending, failure)
    remapped_rows: tuple[int, int, int, int] = (0, 0, 0, 0)
    ecc_supported: bool = True


def _fabric_info(gpus: list[FakeGpu]) -> Callable[[int, Any], None]:
    def read(handle: int, info_ref: Any) -> None:
        gpu = gpus[handle]
        if gpu.fabric_state is None:
            raise nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        info_ref._obj.state = gpu.fabric_state  # what NVML writes into the caller's structure
        info_ref._obj.status = gpu.fabric_status
    return read


def fake_nvml(gpus: list[FakeGpu], driver: str = "580.126.16", **functions: Callable[..., Any]) -> SimpleNamespace:
    """pynvml's constants, errors and structures, and device calls answering for `gpus` (handle = index);
    `functions` replace or add calls."""
    names = {k: v for k, v in vars(pynvml).items() if k.startswith(("NVML_", "NVMLError", "c_nvml"))}

    def ecc(handle: int) -> FakeGpu:
        if not gpus[handle].ecc_supported:
            raise nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return gpus[handle]

    calls: dict[str, Callable[..., Any]] = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlSystemGetDriverVersion": lambda: driver,
        "nvmlDeviceGetCount": lambda: len(gpus),
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetName": lambda h: gpus[h].name,
        "nvmlDeviceGetPersistenceMode": lambda h: gpus[h].persistence,
        "nvmlDeviceGetTotalEccErrors": lambda h, kind, counter: ecc(h).total_ecc.get((kind, counter), 0),
        "nvmlDeviceGetMemoryErrorCounter": lambda h, kind, counter, where: ecc(h).memory_errors.get(
            (kind, counter, where), 0),
        "nvmlDeviceGetRemappedRows": lambda h: ecc(h).remapped_rows,
        "nvmlDeviceGetGpuFabricInfoV": _fabric_info(gpus),
    }
    return SimpleNamespace(**names, **{**calls, **functions})
