"""The ESS lifecycle hooks of a node group: the one source of their names, transitions and timeouts.

Scale-out: held while the node check runs (up to LAUNCH_HOOK_TIMEOUT). Scale-in: held for the stack's
checkpoint_grace_seconds, then CONTINUE. Completing a hook needs its LifecycleActionToken (ESS API
CompleteLifecycleAction), which ESS gives to a notification target or to DescribeLifecycleActions by
scaling activity, not to the instance: the node scripts do not complete Alibaba hooks yet
(components/bootstrap/config.py LIFECYCLE_CLOUDS), so scale-out waits the full timeout and then continues,
and the watcher still runs the checkpoint within the scale-in hook's hold.
"""

from __future__ import annotations

from ..hooks import GroupHooks, Hook

LAUNCH_HOOK_TIMEOUT = 900


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    # The launch hook times out to CONTINUE while no node completes it (see the module note): ABANDON would
    # release every node after the timeout. A failed node check still marks the node unhealthy.
    return GroupHooks(
        launch=Hook("node-check", "SCALE_OUT", LAUNCH_HOOK_TIMEOUT, "CONTINUE"),
        terminate=Hook("checkpoint", "SCALE_IN", checkpoint_grace_seconds, "CONTINUE"),
    )
