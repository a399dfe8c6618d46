"""The Auto Scaling lifecycle hooks of a node group: the one source of their names and timeouts, read
by the group (which registers them) and by the bootstrap (whose node scripts complete them)."""

from __future__ import annotations

from ..hooks import GroupHooks, Hook

# Seconds the node check may take before the launch is abandoned.
LAUNCH_HOOK_TIMEOUT = 900
# The hold starts at launch (Pending:Wait), so the boot check's retries fit what is left of it after:
# EC2 start, kernel, cloud-init, scratch RAID and fabric manager up to gpufleet-health (a budget: a p5's time to
# multi-user is not published; a slower boot meets the hook's ABANDON default, the late completion then fails
# harmlessly), the last check run (two commands at most 20 s each, images/nodecheck/host.py, plus NVML and
# 2 s metadata reads) and the CompleteLifecycleAction call.
BOOT_SECONDS = 360
CHECK_RUN_SECONDS = 60
COMPLETE_SECONDS = 30
NODE_CHECK_RETRY_SECONDS = LAUNCH_HOOK_TIMEOUT - BOOT_SECONDS - CHECK_RUN_SECONDS - COMPLETE_SECONDS


def node_check_retry_seconds(mig: bool) -> int:
    """The boot check's retry window: a MIG node may boot twice inside the hold (its first boot reboots once to
    turn MIG mode on: components/bootstrap/mig.py), so a second boot comes out of the window."""
    return NODE_CHECK_RETRY_SECONDS - (BOOT_SECONDS if mig else 0)


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    """The hooks of every Auto Scaling node group; the terminate hook waits the stack's checkpoint grace."""
    return GroupHooks(
        launch=Hook("node-check", "autoscaling:EC2_INSTANCE_LAUNCHING", LAUNCH_HOOK_TIMEOUT, "ABANDON"),
        terminate=Hook("checkpoint", "autoscaling:EC2_INSTANCE_TERMINATING", checkpoint_grace_seconds, "CONTINUE"),
    )
