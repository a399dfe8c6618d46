"""The Auto Scaling lifecycle hooks of a node group: the one source of their names and timeouts, read
by the group (which registers them) and by the bootstrap (whose node scripts complete them)."""

from __future__ import annotations

from dataclasses import dataclass

from ...bootstrap import LifecycleHooks

# Seconds the node check may take before the launch is abandoned.
LAUNCH_HOOK_TIMEOUT = 900


@dataclass(frozen=True)
class Hook:
    """One lifecycle hook, with the provider's field meanings."""

    name: str
    """Hook name, unique in the group; the node passes it to complete-lifecycle-action."""
    transition: str
    """autoscaling:EC2_INSTANCE_LAUNCHING or autoscaling:EC2_INSTANCE_TERMINATING."""
    heartbeat_timeout: int
    """Seconds before the default result applies."""
    default_result: str
    """CONTINUE or ABANDON."""


@dataclass(frozen=True)
class GroupHooks:
    """The launch hook (node check gates the node) and the terminate hook (checkpoint before it goes)."""

    launch: Hook
    """Held until the node check passes; ABANDON when it fails or times out."""
    terminate: Hook
    """Held while the checkpoint runs; CONTINUE when it times out."""

    def for_node(self, region: str, group_name: str) -> LifecycleHooks:
        """What the bootstrap needs to complete these hooks from the node."""
        return LifecycleHooks(
            region=region, group_name=group_name, launch_hook=self.launch.name, terminate_hook=self.terminate.name
        )


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    """The hooks of every Auto Scaling node group; the terminate hook waits the stack's checkpoint grace."""
    return GroupHooks(
        launch=Hook("node-check", "autoscaling:EC2_INSTANCE_LAUNCHING", LAUNCH_HOOK_TIMEOUT, "ABANDON"),
        terminate=Hook("checkpoint", "autoscaling:EC2_INSTANCE_TERMINATING", checkpoint_grace_seconds, "CONTINUE"),
    )
