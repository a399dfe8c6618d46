"""A node group's scaling lifecycle hooks as every cloud's scaling service has them: a launch hook the node
check holds, a terminate hook the checkpoint holds. Each cloud's lifecycle.py names their transitions."""

from __future__ import annotations

from dataclasses import dataclass

from ..bootstrap import LifecycleHooks


@dataclass(frozen=True)
class Hook:
    """One lifecycle hook, with the scaling service's field meanings."""

    name: str
    """Hook name, unique in the group; the node passes it when it completes the action."""
    transition: str
    """The cloud's transition: autoscaling:EC2_INSTANCE_LAUNCHING, SCALE_OUT, ..."""
    heartbeat_timeout: int
    """Seconds the instance is held before the default result applies."""
    default_result: str
    """CONTINUE or ABANDON."""


@dataclass(frozen=True)
class GroupHooks:
    """The launch hook (the node check gates the node) and the terminate hook (checkpoint before it goes)."""

    launch: Hook
    terminate: Hook

    def for_node(self, region: str, group_name: str) -> LifecycleHooks:
        """What the bootstrap needs to complete these hooks from the node."""
        return LifecycleHooks(
            region=region, group_name=group_name, launch_hook=self.launch.name, terminate_hook=self.terminate.name
        )


# A budget for a node's start, the same on every cloud: instance start, kernel, cloud-init, scratch RAID and fabric
# manager up to gpufleet-health (no cloud publishes a GPU type's time to multi-user; a slower boot meets the hold's
# default result, the late completion then fails harmlessly).
BOOT_SECONDS = 360
# The last node check run: two commands at most 20 s each (images/nodecheck/host.py), NVML, the CUDA start and 2 s
# metadata reads.
CHECK_RUN_SECONDS = 60


def node_check_retry_seconds(hold_seconds: int, after_check_seconds: int, mig: bool) -> int:
    """How long the boot node check may run again after a failure (scripts/health.sh) inside a hold of `hold_seconds`
    that starts at launch and must also fit `after_check_seconds` (the cloud's own work once the check is done): what
    is left after the boot, the last run and that work. A MIG node boots twice inside the hold (its first boot
    reboots once to turn MIG mode on: components/bootstrap/mig.py). Never below 0: then the first result decides."""
    boots = 2 if mig else 1
    return max(0, hold_seconds - boots * BOOT_SECONDS - CHECK_RUN_SECONDS - after_check_seconds)
