"""A node's MIG state for scripts/slurm-gres.py: the fake NVML with MIG devices, and mig-minors as the driver lists
it (`gpuN/giG/access M`, `gpuN/giG/ciC/access M`: the names Slurm's gpu_nvml.c looks up, lines 1107-1109)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace

from fake_nvml import FakeGpu, fake_nvml

SLURM_GRES = Path(__file__).parents[1] / "components/bootstrap/scripts/slurm-gres.py"
# A MIG device: (GPU instance id, compute instance id, GPU instance slices, memory MB). 9856 MB: an H100 80GB 1g.10gb.
H100_1G_10GB = (1, 9856)
H100_BYTES = 80 * 2**30


def slurm_gres_script() -> ModuleType:
    """scripts/slurm-gres.py as a module."""
    spec = importlib.util.spec_from_file_location("slurm_gres", SLURM_GRES)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mig_nvml(devices: dict[int, list[tuple[int, int, int, int]]], gpu_bytes: int = H100_BYTES) -> SimpleNamespace:
    """Fake NVML of the GPUs `devices` names (minor = index), each of `gpu_bytes` memory: GPU -> its MIG devices
    (GI id, CI id, slices, MB)."""
    fake = fake_nvml([FakeGpu(fabric_state=None) for _ in devices])

    class NotFound(Exception):
        pass

    def handle_by_index(gpu: int, slot: int) -> tuple[int, int]:
        if slot >= len(devices[gpu]):
            raise NotFound
        return gpu, slot

    def attributes(device: tuple[int, int]) -> SimpleNamespace:
        _, _, slices, memory = devices[device[0]][device[1]]
        return SimpleNamespace(gpuInstanceSliceCount=slices, computeInstanceSliceCount=slices, memorySizeMB=memory)

    fake.NVMLError_NotFound = NotFound
    fake.nvmlDeviceGetMinorNumber = lambda gpu: gpu
    fake.nvmlDeviceGetMaxMigDeviceCount = lambda gpu: 7
    fake.nvmlDeviceGetMigDeviceHandleByIndex = handle_by_index
    fake.nvmlDeviceGetGpuInstanceId = lambda d: devices[d[0]][d[1]][0]
    fake.nvmlDeviceGetComputeInstanceId = lambda d: devices[d[0]][d[1]][1]
    fake.nvmlDeviceGetAttributes = attributes
    fake.nvmlDeviceGetMemoryInfo = lambda gpu: SimpleNamespace(total=gpu_bytes)
    return fake


def one_g_devices(gpus: int, per_gpu: int) -> dict[int, list[tuple[int, int, int, int]]]:
    """`per_gpu` H100 1g.10gb devices on each GPU, GPU instances 1.. with compute instance 0."""
    return {gpu: [(gi, 0, *H100_1G_10GB) for gi in range(1, per_gpu + 1)] for gpu in range(gpus)}


def mig_minors(gpus: int, instances: int = 14) -> str:
    """mig-minors lines for `gpus` GPUs, GPU instances 1..`instances` each with compute instance 0."""
    lines, minor = ["config 1", "monitor 2"], 3
    for gpu in range(gpus):
        for gi in range(1, instances + 1):
            lines += [f"gpu{gpu}/gi{gi}/access {minor}", f"gpu{gpu}/gi{gi}/ci0/access {minor + 1}"]
            minor += 2
    return "\n".join(lines) + "\n"
