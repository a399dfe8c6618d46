"""Compare a node's facts with its expectation: one Check per property, named for the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from .cuda import CudaReading
from .ecc import DRAM_ERROR_THRESHOLD, SRAM_CORRECTABLE_THRESHOLD, ecc_problems
from .expect import Expectation, InstanceExpectation
from .fabric import fabric_problem
from .gpus import GpuReport
from .host import (
    Runner,
    efa_devices,
    erdma_devices,
    fabric_manager_running,
    fabric_manager_state,
    ib_ports,
    mount_points,
    mounts,
    open_directory,
    rdma_devices,
    rdma_netdev_mtus,
)

ECC_EXPECTED = (f"no uncorrectable error since the driver loaded, no row remap pending or failed, no uncorrectable "
                f"SRAM error, SRAM correctable <= {SRAM_CORRECTABLE_THRESHOLD}, DRAM <= {DRAM_ERROR_THRESHOLD}")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    expected: object
    found: object

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def gpu_checks(expect: Expectation, inst: InstanceExpectation, gpus: GpuReport) -> list[Check]:
    if gpus.error:
        return [Check("nvml", False, "NVML answers", gpus.error)]
    wrong_model = [n for n in gpus.names if inst.gpu_model.lower() not in n.lower()]
    ecc = {str(i): problems for i, reading in gpus.ecc.items() if (problems := ecc_problems(reading))}
    # Without persistence mode each CUDA start re-initialises the GPU (nvidia-persistenced, shipped in the image).
    off = sorted(i for i, on in gpus.persistence.items() if not on)
    return [
        Check("gpu_count", len(gpus.names) == inst.gpu_count, inst.gpu_count, len(gpus.names)),
        Check("gpu_model", bool(gpus.names) and not wrong_model, inst.gpu_model, sorted(set(gpus.names))),
        Check("driver_version", gpus.driver == expect.driver, expect.driver, gpus.driver),
        Check("gpu_memory", not ecc, ECC_EXPECTED, ecc or "healthy"),
        Check("persistence_mode", len(gpus.persistence) == len(gpus.names) and not off, "on for every GPU",
              {"off": off} if off else f"on for {len(gpus.persistence)} of {len(gpus.names)}"),
        *mig_checks(inst, gpus),
        *fabric_checks(gpus),
    ]


def fabric_checks(gpus: GpuReport) -> list[Check]:
    """Where the GPUs report an NVLink fabric (fabric.py): every one registered with it."""
    reported = {i: reading for i, reading in gpus.fabric.items() if reading is not None}
    if not reported:
        return []
    waiting = {str(i): problem for i, reading in reported.items() if (problem := fabric_problem(reading))}
    return [Check("nvlink_fabric", not waiting, "COMPLETED on every GPU",
                  waiting or f"COMPLETED on {len(reported)} of {len(gpus.names)}")]


def cuda_check(inst: InstanceExpectation, cuda: CudaReading) -> list[Check]:
    """CUDA starts and sees the GPUs; a MIG node's count is not the GPUs' (CUDA enumerates MIG devices, as
    CUDA_VISIBLE_DEVICES selects them), so there it only has to start."""
    if cuda.error:
        return [Check("cuda_init", False, "cuInit succeeds", cuda.error)]
    want = inst.gpu_count if not inst.mig_devices else "at least 1"
    ok = cuda.devices == inst.gpu_count if not inst.mig_devices else bool(cuda.devices)
    return [Check("cuda_init", ok, {"devices": want}, {"devices": cuda.devices})]


def nvswitch_check(inst: InstanceExpectation, nvswitches: list[str]) -> list[Check]:
    """NVSwitch presence is the PCI bus's (host.nvswitch_devices): where it shows switches the boot starts the fabric
    manager (scripts/common.sh) and the fabric manager is checked, whatever the catalog says. A type the catalog gives
    switches must show them: a VM that does not see its switches cannot run the fabric manager they need."""
    expected = "NVSwitches on the PCI bus" if inst.nvswitch else "any"
    return [Check("nvswitch_pci", bool(nvswitches) or not inst.nvswitch, expected, {"nvswitches": len(nvswitches)})]


def mig_checks(inst: InstanceExpectation, gpus: GpuReport) -> list[Check]:
    """MIG groups only: MIG mode on every GPU and the boot's devices on each (components/bootstrap/mig.py)."""
    if not inst.mig_devices:
        return []
    off = sorted(i for i, on in gpus.mig_enabled.items() if not on)
    wrong = {str(i): n for i, n in gpus.mig_devices.items() if n != inst.mig_devices}
    total = sum(gpus.mig_devices.values())
    return [
        Check("mig_mode", len(gpus.mig_enabled) == len(gpus.names) and not off, "enabled on every GPU",
              {"off": off} if off else f"enabled on {len(gpus.mig_enabled)} of {len(gpus.names)}"),
        Check("mig_devices", not wrong and total == inst.mig_devices * inst.gpu_count,
              {"per_gpu": inst.mig_devices, "total": inst.mig_devices * inst.gpu_count},
              {"total": total, **({"per_gpu": wrong} if wrong else {})}),
    ]


FABRIC_MANAGER_PROBES = ("service", "process")
"""service: the node's own systemd unit and binary (a VM at boot); process: a running fabric manager process under
--proc-root (a pod, which has neither systemd nor the binary)."""


def fabric_manager_checks(expect: Expectation, inst: InstanceExpectation, run: Runner, probe: str = "service",
                          proc_root: Path = Path("/proc"), nvswitches: list[str] | None = None) -> list[Check]:
    """Where the catalog's type or the PCI bus (`nvswitches`) has NVSwitches."""
    if not inst.nvswitch and not nvswitches:
        return []
    if probe == "process":
        # Its version cannot be read from a pod (the binary is the host's or the driver container's). A fabric manager
        # runs only at its driver's version (talos.dev NVIDIA Fabric Manager guide: "has to match with the NVIDIA
        # driver version in use"), which driver_version checks.
        running = fabric_manager_running(proc_root)
        return [Check("fabric_manager_running", running, "running", "running" if running else "not running")]
    state, version = fabric_manager_state(run)
    return [
        Check("fabric_manager_active", state == "active", "active", state),
        Check("fabric_manager_version", version == expect.fabric_manager, expect.fabric_manager, version),
    ]


def rdma_checks(inst: InstanceExpectation, sysfs_root: Path, fabric_mtu: int | None = None) -> list[Check]:
    devices = rdma_devices(sysfs_root)
    want = inst.fabric_interfaces
    if inst.fabric == "none" or want == 0:
        return []
    if inst.fabric == "efa":
        found = efa_devices(devices)
        return [Check("rdma_efa_devices", len(found) == want, want, len(found))]
    if inst.fabric == "erdma":
        found = erdma_devices(sysfs_root, devices)
        checks = [Check("rdma_erdma_devices", len(found) == want, want, len(found))]
        if fabric_mtu is not None:  # the MTU Alibaba's rule gives the ERIs (components/clouds/alicloud/eri.py)
            mtus = rdma_netdev_mtus(sysfs_root, found)
            wrong = {d: mtu for d, mtu in mtus.items() if mtu != fabric_mtu}
            checks.append(Check("erdma_mtu", bool(mtus) and not wrong, fabric_mtu, wrong or sorted(set(mtus.values()))))
        return checks
    if inst.fabric == "infiniband":
        ports = ib_ports(sysfs_root, devices)
        active = [p for p in ports if p.state.upper().endswith("ACTIVE")]
        rates = sorted({p.rate for p in active if p.rate})
        found = {"active": len(active), "rates": rates}
        # GPUDirect RDMA: nvidia-peermem loaded at boot (modules-load.d, images/install/gpu-stack.sh).
        peermem = (sysfs_root / "module" / "nvidia_peermem").is_dir()
        return [Check("rdma_ib_ports_active", len(active) == want, want, found),
                Check("nvidia_peermem_loaded", peermem, True, peermem)]
    # RoCE exposes its HCAs under the same class: count devices.
    return [Check("rdma_devices", len(devices) == want, want, len(devices))]


def scratch_check(expect: Expectation, proc_root: Path) -> list[Check]:
    if expect.scratch_mount is None:
        return []
    mounted = expect.scratch_mount in mount_points(proc_root)
    found = expect.scratch_mount if mounted else None
    return [Check("scratch_mounted", mounted, expect.scratch_mount, found)]


def shared_mount_check(
    expect: Expectation, proc_root: Path, open_dir: Callable[[str], None] = open_directory
) -> list[Check]:
    """A lustre mount at the shared path once reached, not only its automount's autofs."""
    if expect.shared_mount is None:
        return []
    open_dir(expect.shared_mount)
    types = mounts(proc_root).get(expect.shared_mount, set())
    found = "lustre" if "lustre" in types else ",".join(sorted(types)) or None
    return [Check("shared_mounted", found == "lustre", {"path": expect.shared_mount, "type": "lustre"}, found)]
