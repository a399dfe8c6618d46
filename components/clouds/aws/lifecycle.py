"""The Auto Scaling lifecycle hooks of a node group: the one source of their names and timeouts, read
by the group (which registers them) and by the bootstrap (whose node scripts complete them)."""

from __future__ import annotations

from ..hooks import GroupHooks, Hook

# Seconds the node check may take before the launch is abandoned.
LAUNCH_HOOK_TIMEOUT = 900


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    """The hooks of every Auto Scaling node group; the terminate hook waits the stack's checkpoint grace."""
    return GroupHooks(
        launch=Hook("node-check", "autoscaling:EC2_INSTANCE_LAUNCHING", LAUNCH_HOOK_TIMEOUT, "ABANDON"),
        terminate=Hook("checkpoint", "autoscaling:EC2_INSTANCE_TERMINATING", checkpoint_grace_seconds, "CONTINUE"),
    )
