"""Host facts outside NVML: fabric manager service, NVSwitches and RDMA devices in sysfs, mounts in /proc."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

Runner = Callable[[Sequence[str]], tuple[int, str]]


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """Exit status and stdout of a command; a missing command reads as status 127."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=20, check=False)
    except FileNotFoundError:
        return 127, ""
    except subprocess.TimeoutExpired:
        return 124, ""
    return done.returncode, done.stdout


FABRIC_MANAGER = "nv-fabricmanager"


def fabric_manager_state(run: Runner) -> tuple[str, str | None]:
    """(systemctl is-active output, fabric manager version or None)."""
    _, state = run(["systemctl", "is-active", "nvidia-fabricmanager"])
    status, out = run([FABRIC_MANAGER, "--version"])
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", out) if status == 0 else None
    return (state.strip() or "unknown"), (match.group(1) if match else None)


def fabric_manager_running(proc_root: Path) -> bool:
    """Whether a process of the fabric manager's binary runs in the PID namespace `proc_root` shows: in a pod with
    the host's /proc mounted, the host's, where systemd (ACK's image) or the GPU Operator's driver container (AKS)
    started it. Read from each process's cmdline (its argv[0]), which any user may read: comm is cut at 15
    characters, one short of the binary's name."""
    for entry in proc_root.iterdir() if proc_root.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:  # the process ended while we looked
            continue
        if os.path.basename(argv0) == FABRIC_MANAGER.encode():
            return True
    return False


@dataclass(frozen=True)
class IbPort:
    device: str
    port: str
    state: str
    rate: str


def rdma_devices(sysfs_root: Path) -> list[str]:
    base = sysfs_root / "class" / "infiniband"
    return sorted(p.name for p in base.iterdir()) if base.is_dir() else []


def efa_devices(devices: list[str]) -> list[str]:
    """EFA devices by the names the efa driver ("efa_%d") and rdma-core's udev naming ("rdmap<bus>s<slot>") give
    them; an EC2 instance exposes no other RDMA device (ENA has none)."""
    return [d for d in devices if d.startswith(("efa_", "rdmap"))]


def rdma_driver(sysfs_root: Path, device: str) -> str | None:
    """The kernel driver bound to an RDMA device's PCI function: the name its device/driver link points to."""
    link = sysfs_root / "class" / "infiniband" / device / "device" / "driver"
    try:
        return os.path.basename(os.readlink(link))
    except OSError:
        return None


ERDMA_DRIVER = "erdma"
"""The eRDMA PCI driver's name (linux drivers/infiniband/hw/erdma/erdma_main.c: erdma_pci_driver.name =
DRV_MODULE_NAME "erdma"), whatever the RDMA device is called: its name follows the driver's mode."""


def erdma_devices(sysfs_root: Path, devices: list[str]) -> list[str]:
    """eRDMA devices by the driver bound to them, not by their name."""
    return [d for d in devices if rdma_driver(sysfs_root, d) == ERDMA_DRIVER]


def rdma_netdev_mtus(sysfs_root: Path, devices: list[str]) -> dict[str, int | None]:
    """RDMA device -> the MTU of the network interface its first port's GID 0 is on (ports/1/gid_attrs/ndevs/0 names
    it: Documentation/ABI/stable/sysfs-class-infiniband); None where either cannot be read."""
    found: dict[str, int | None] = {}
    for device in devices:
        ndev = sysfs_root / "class" / "infiniband" / device / "ports" / "1" / "gid_attrs" / "ndevs" / "0"
        try:
            name = ndev.read_text().strip()
            found[device] = int((sysfs_root / "class" / "net" / name / "mtu").read_text())
        except (OSError, ValueError):
            found[device] = None
    return found


NVIDIA_VENDOR = 0x10DE
NVSWITCH_CLASS = 0x0680
"""PCI base class 06h (bridge), sub-class 80h (other bridge): how HGX boards show their NVSwitches, e.g.
`Bridge [0680]: NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3]` (an HGX H100's lspci -nn) and `Bridge [0680]:
NVIDIA Corporation Device [10de:1af1]` on HGX A100 (leptonai/gpud fabricmanager tests, isNVIDIANVSwitchPCI)."""


def nvswitch_devices(sysfs_root: Path) -> list[str]:
    """PCI addresses of the NVSwitches the node sees, from each device's vendor and class (sysfs-bus-pci: class is
    0xBBSSPP, base class, sub-class, programming interface). A VM sees them only where they are passed through to it,
    which is where its own fabric manager must run."""
    base = sysfs_root / "bus" / "pci" / "devices"
    found = []
    for device in sorted(base.iterdir()) if base.is_dir() else ():
        try:
            vendor = int((device / "vendor").read_text(), 16)
            pci_class = int((device / "class").read_text(), 16)
        except (OSError, ValueError):
            continue
        if vendor == NVIDIA_VENDOR and pci_class >> 8 == NVSWITCH_CLASS:
            found.append(device.name)
    return found


def ib_ports(sysfs_root: Path, devices: list[str]) -> list[IbPort]:
    """InfiniBand ports, by the port's link layer (sysfs ports/N/link_layer, Documentation/ABI/stable/
    sysfs-class-infiniband), with state (e.g. '4: ACTIVE') and rate ('400 Gb/sec (4X NDR)'). Azure ND and NC VMs
    also expose their accelerated-networking NIC as an mlx5 RDMA device (mlx5_an0, link layer Ethernet): it is
    not a fabric port, whatever its name or state."""
    ports = []
    for device in devices:
        for port in sorted((sysfs_root / "class" / "infiniband" / device / "ports").glob("*")):
            def read(name: str, port: Path = port) -> str:
                path = port / name
                return path.read_text().strip() if path.is_file() else ""
            if read("link_layer") == "InfiniBand":
                ports.append(IbPort(device, port.name, read("state"), read("rate")))
    return ports


def mounts(proc_root: Path) -> dict[str, set[str]]:
    """Mount point -> file system types there (an automount point: autofs, plus the file system once mounted)."""
    found: dict[str, set[str]] = {}
    path = proc_root / "mounts"
    for fields in (line.split() for line in path.read_text().splitlines()) if path.is_file() else ():
        if len(fields) >= 3:
            found.setdefault(fields[1], set()).add(fields[2])
    return found


def mount_points(proc_root: Path) -> set[str]:
    return set(mounts(proc_root))


def open_directory(path: str) -> None:
    """Read a directory: what mounts an x-systemd.automount (a stat does not)."""
    try:
        with os.scandir(path) as entries:
            next(entries, None)
    except OSError:
        pass
