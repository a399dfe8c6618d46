"""GPU memory health as fleets judge it, not by lifetime totals: Azure's azurehpc-health-checks
(customTests/azure_gpu_ecc.nhc @0e0a1ac, check_ecc lines 49-98, thresholds from conf/nd96isr_h100_v5.conf:50
`check_gpu_ecc 20000000 10000`) fails a GPU on a pending or failed row remap, any uncorrectable SRAM error, SRAM
correctable errors past 10000 and DRAM errors past 20000000. An aggregate (lifetime) uncorrectable DRAM count alone
fails nothing: each such error was remapped (Ampere and newer remap the row at the next GPU reset), so summing it
would replace a repaired GPU forever. An uncorrectable error since the driver loaded (volatile, DCGM's DBE field
311) still fails: its row is not remapped until the GPU is reset."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

DRAM_ERROR_THRESHOLD = 20_000_000
SRAM_CORRECTABLE_THRESHOLD = 10_000


@dataclass(frozen=True)
class EccReading:
    """One GPU's counters; None (or absent) where the GPU does not report them (NVML_ERROR_NOT_SUPPORTED)."""

    volatile_uncorrectable: int | None = None
    """nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE): since the driver loaded."""
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    """nvmlDeviceGetRemappedRows' isPending and failureOccurred (Ampere and newer)."""
    counters: dict[str, int] = field(default_factory=dict)
    """'<location>.<corrected|uncorrected>.<volatile|aggregate>' -> nvmlDeviceGetMemoryErrorCounter, locations sram
    and dram (the nvidia-smi ecc.errors.* fields the Azure check queries)."""


def _supported(nvml: ModuleType, read: Callable[..., Any], *args: object) -> Any | None:
    """`read(*args)`, or None where the GPU or driver does not support it."""
    try:
        return read(*args)
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound):
        return None


def read_ecc(nvml: ModuleType, handle: object) -> EccReading:
    volatile = _supported(nvml, nvml.nvmlDeviceGetTotalEccErrors, handle,
                          nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC)
    rows = _supported(nvml, nvml.nvmlDeviceGetRemappedRows, handle)  # (corrected, uncorrected, pending, failure)
    counters = {}
    for location, where in (("sram", nvml.NVML_MEMORY_LOCATION_SRAM), ("dram", nvml.NVML_MEMORY_LOCATION_DRAM)):
        for kind, error_type in (("corrected", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                                 ("uncorrected", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
            for counter, counter_type in (("volatile", nvml.NVML_VOLATILE_ECC), ("aggregate", nvml.NVML_AGGREGATE_ECC)):
                value = _supported(nvml, nvml.nvmlDeviceGetMemoryErrorCounter, handle, error_type, counter_type, where)
                if value is not None:
                    counters[f"{location}.{kind}.{counter}"] = value
    return EccReading(
        volatile_uncorrectable=volatile,
        remap_pending=bool(rows[2]) if rows is not None else None,
        remap_failure=bool(rows[3]) if rows is not None else None,
        counters=counters,
    )


def ecc_problems(reading: EccReading) -> list[str]:
    """Why this GPU's memory is unhealthy; empty when it is not."""
    problems = []
    if reading.volatile_uncorrectable:
        problems.append(f"{reading.volatile_uncorrectable} uncorrectable since the driver loaded")
    if reading.remap_pending:
        problems.append("row remap pending (the GPU needs a reset)")
    if reading.remap_failure:
        problems.append("row remap failed")
    for name, value in sorted(reading.counters.items()):
        location, kind, _ = name.split(".")
        if location == "sram" and kind == "uncorrected" and value > 0:
            problems.append(f"{name} {value}")
        elif location == "sram" and value > SRAM_CORRECTABLE_THRESHOLD:
            problems.append(f"{name} {value} > {SRAM_CORRECTABLE_THRESHOLD}")
        elif location == "dram" and value > DRAM_ERROR_THRESHOLD:
            problems.append(f"{name} {value} > {DRAM_ERROR_THRESHOLD}")
    return problems
