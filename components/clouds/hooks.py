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
