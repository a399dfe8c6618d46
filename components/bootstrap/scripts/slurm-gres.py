#!/usr/bin/python3
"""gpufleet-slurm-gres <plan> <instance type>: write the node's own gres.conf, which the served one includes.

Whole GPUs: the line rendered for the type. MIG: each MIG device as one GRES of its device files, read from NVML and
/proc after mig.sh partitioned the GPUs, as Slurm's own NVML plugin does (SchedMD/slurm @slurm-25-11-5-1
src/plugins/gpu/nvml/gpu_nvml.c: the parent's minor, GI and CI ids, `gpuN/giG/access` and `gpuN/giG/ciC/access`
minors in mig-minors, lines 1087-1109; files /dev/nvidiaN,/dev/nvidia-caps/nvidia-capM,... line 1294). The type is
the profile's name as mig-parted and the device plugin spell it (NVIDIA/go-nvlib pkg/nvlib/device/mig_profile.go,
String and getMigMemorySizeGB: the device's share of the GPU's memory in eighths, rounded up, times the GPU's GiB),
which the node registers; Slurm's own plugin rounds the device's GiB instead (gpu_nvml.c lines 1276-1285), which
names an H200's 1g.18gb (16 GiB) 1g.16gb.
A node whose devices differ from what it registers writes nothing and fails, so the join stops before slurmd starts.
"""

import json
import math
import sys
from collections import Counter
from typing import Any

MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"
NVML_PATH = "/opt/gpufleet/nodecheck/vendor"  # the image's nvidia-ml-py (images/install/nodecheck.sh)


def read_minors(path: str) -> dict[str, int]:
    """mig-minors: `<capability> <minor>` per line (gpu0/gi1/access 12)."""
    with open(path, encoding="ascii") as lines:
        return {name: int(minor) for name, minor in (line.split() for line in lines if line.strip())}


def mig_type(attributes: Any, gpu_bytes: int) -> str:
    """go-nvlib's profile name of a MIG device of a GPU of `gpu_bytes` memory (Go's math.Round: halves up)."""
    gi, ci = attributes.gpuInstanceSliceCount, attributes.computeInstanceSliceCount
    share = math.ceil(attributes.memorySizeMB * 2**20 / gpu_bytes * 8) / 8
    gb = math.floor(share * -(-gpu_bytes // 2**30) + 0.5)
    return f"{f'{ci}c.' if ci != gi else ''}{gi}g.{gb}gb"


def mig_lines(nvml: Any, minors: dict[str, int], device_dir: str) -> list[tuple[str, str]]:
    """(type, gres.conf line) per MIG device on the node."""
    found = []
    for index in range(nvml.nvmlDeviceGetCount()):
        gpu = nvml.nvmlDeviceGetHandleByIndex(index)
        minor = nvml.nvmlDeviceGetMinorNumber(gpu)
        gpu_bytes = nvml.nvmlDeviceGetMemoryInfo(gpu).total
        for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(gpu)):
            try:
                device = nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, slot)
            except nvml.NVMLError_NotFound:  # an empty slot
                continue
            gi = f"gpu{minor}/gi{nvml.nvmlDeviceGetGpuInstanceId(device)}"
            ci = f"{gi}/ci{nvml.nvmlDeviceGetComputeInstanceId(device)}"
            missing = [cap for cap in (gi, ci) if f"{cap}/access" not in minors]
            if missing:
                raise ValueError(f"{missing[0]}/access is not in mig-minors")
            caps = [f"{device_dir}/nvidia-caps/nvidia-cap{minors[f'{cap}/access']}" for cap in (gi, ci)]
            kind = mig_type(nvml.nvmlDeviceGetAttributes(device), gpu_bytes)
            found.append((kind, f"Name=gpu Type={kind} MultipleFiles={device_dir}/nvidia{minor},{','.join(caps)}\n"))
    return found


def node_gres(plan: dict, instance_type: str, nvml: Any = None, minors_path: str = MIG_MINORS) -> str:
    """The node's gres.conf; ValueError naming what differs."""
    wanted = plan["types"].get(instance_type)
    if wanted is None:
        raise ValueError(f"no GRES for instance type {instance_type} in the plan")
    if "conf" in wanted:
        return wanted["conf"]
    if nvml is None:
        sys.path.insert(0, NVML_PATH)
        import pynvml as nvml  # noqa: PLC0415 - from the image's path, only where MIG is read
    nvml.nvmlInit()
    try:
        found = mig_lines(nvml, read_minors(minors_path), plan["device_dir"])
    except nvml.NVMLError as err:
        raise ValueError(f"NVML: {err}") from err
    finally:
        nvml.nvmlShutdown()
    have = Counter(kind for kind, _ in found)
    if have != Counter(wanted["mig"]):
        raise ValueError(f"MIG devices {dict(sorted(have.items()))}, the node registers {wanted['mig']}")
    return "".join(line for _, line in found)


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as file:
        plan = json.load(file)  # components/slurm/gres_conf.py node_gres_plan
    try:
        text = node_gres(plan, argv[2])
    except (ValueError, OSError) as err:
        print(f"gpufleet-slurm-gres: {err}", file=sys.stderr)
        return 1
    with open(plan["path"], "w", encoding="ascii") as out:
        out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
