"""MIG at boot (scripts/mig.sh): every GPU of a MIG group partitioned before the node check.

Why the script does what it does (kept here: the script's own bytes count against the cloud's user data cap):
- It runs first in gpufleet-health.service (a drop-in's ExecStartPre, cloud_init.MIG_DROP_IN), so after what the
  node check waits for (nvidia-persistenced, the fabric manager: NVIDIA's nvidia-mig-manager.service orders itself
  after the same two) and before the node check itself, at every boot. Its failure does not stop the unit: the
  node check then counts the MIG devices (expect.json `mig_devices` per GPU), finds too few and fails the node
  (launch hook ABANDON, the unhealthy mark), so a node is replaced, never left half-done.
- MIG mode persists across reboots, the MIG devices do not (NVIDIA MIG user guide, Getting Started with MIG): the
  devices are created again at every boot, after destroying leftovers of an earlier run.
- A mode change takes effect on a GPU reset, which a VM's pass-through GPU does not offer the guest: NVML then asks
  for a VM reboot (nvmlDeviceSetMigMode: NVML_ERROR_RESET_REQUIRED on pass-through virtualization). A GPU in use
  (DCGM's nv-hostengine on first boot) also leaves the mode pending. So the mode is set pending and the node
  reboots once, as NVIDIA's own boot service does (NVIDIA/mig-parted deployments/systemd/service.sh: one reboot,
  marked on disk, then an error); a mode still off after that reboot fails the node as above. While the reboot is
  pending the script holds the unit, so the node check never runs on a node about to reboot. A launch hook must
  cover two boots (AWS: the hook's heartbeat timeout).
- A node's layout is fixed for its life: a new profile reaches a group through its launch template, on new nodes;
  nothing repartitions GPUs a workload may be using, so a reconfiguration cannot strand a node.
- `nvidia-smi mig -i <gpu> -cgi <profiles> -C` creates the GPU instances, each with its default compute instance,
  so each is one MIG device to CUDA and to the Kubernetes device plugin; the largest first (gpufleet.catalog.mig).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpufleet.catalog.mig import CONFIG_NAME, DEVICE_PROFILE, MAX_DEVICES_PER_GPU


@dataclass(frozen=True)
class MigLayout:
    """The MIG devices the boot script creates on every GPU of the group."""

    profile: str
    """The mig-parted config name the group's gpu_sharing names (all-1g.10gb, all-balanced...)."""
    devices: Mapping[str, int]
    """Device profile -> count on one GPU, in creation order (largest first)."""

    @property
    def per_gpu(self) -> int:
        return sum(self.devices.values())

    @property
    def instances(self) -> str:
        """The device list `nvidia-smi mig -cgi` takes: each profile name as many times as it is created."""
        return ",".join(name for name, count in self.devices.items() for _ in range(count))

    def problem(self) -> str | None:
        """What is wrong with the layout, naming the field; None when it can be applied."""
        if not isinstance(self.profile, str) or not re.fullmatch(CONFIG_NAME, self.profile):
            return f"mig.profile: must be a mig-parted config like all-1g.10gb, got {self.profile!r}"
        if not self.devices or not all(
            isinstance(name, str) and DEVICE_PROFILE.fullmatch(name) and isinstance(n, int) and n >= 1
            for name, n in self.devices.items()
        ):
            return f"mig.devices: device profiles like 1g.10gb with counts >= 1, got {self.devices!r}"
        if self.per_gpu > MAX_DEVICES_PER_GPU:
            return f"mig.devices: {self.per_gpu} devices on one GPU, at most {MAX_DEVICES_PER_GPU}"
        return None
