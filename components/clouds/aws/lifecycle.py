"""The Auto Scaling lifecycle hooks of a node group: the one source of their names and timeouts, read
by the group (which registers them) and by the bootstrap (whose node scripts complete them)."""

from __future__ import annotations

from ..hooks import GroupHooks, Hook
from ..hooks import node_check_retry_seconds as retry_inside

# Seconds the node check may take before the launch is abandoned.
LAUNCH_HOOK_TIMEOUT = 900
# The hold starts at launch (Pending:Wait); after the last check run the node calls CompleteLifecycleAction.
COMPLETE_SECONDS = 30


def node_check_retry_seconds(mig: bool) -> int:
    """The boot check's retry window inside the launch hook's hold (hooks.node_check_retry_seconds)."""
    return retry_inside(LAUNCH_HOOK_TIMEOUT, COMPLETE_SECONDS, mig)


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    """The hooks of every Auto Scaling node group; the terminate hook waits the stack's checkpoint grace."""
    return GroupHooks(
        launch=Hook("node-check", "autoscaling:EC2_INSTANCE_LAUNCHING", LAUNCH_HOOK_TIMEOUT, "ABANDON"),
        terminate=Hook("checkpoint", "autoscaling:EC2_INSTANCE_TERMINATING", checkpoint_grace_seconds, "CONTINUE"),
    )
