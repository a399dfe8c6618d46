"""The ESS lifecycle hooks of a node group: the one source of their names, transitions and timeouts.

Scale-out: held while the node check gates the node. Completing a hook needs its LifecycleActionToken (ESS API
CompleteLifecycleAction), which ESS gives to the hook's notification target, never to the instance; so the hook
notifies the cluster's scale-out gate, an OOS template (scale_out_gate.py) that runs the node check on the new
nodes through Cloud Assistant and completes the action: CONTINUE when they pass, ABANDON when one fails. The
default result is ABANDON too: a node whose check never reported in time (no Cloud Assistant agent, a boot
slower than the hold, OOS unable to run) is released rather than joining unchecked.

Scale-in: held for the stack's checkpoint_grace_seconds, then CONTINUE. It has no notification target: the
spot watcher on the node runs the checkpoint within the hold (components/bootstrap/config.py LIFECYCLE_CLOUDS).
"""

from __future__ import annotations

from ..hooks import GroupHooks, Hook

LAUNCH_HOOK_TIMEOUT = 900
# Of the scale-out hold, what OOS needs around the command: starting the execution, delivering the command to
# the Cloud Assistant agent and calling CompleteLifecycleAction before the hook's default result applies.
GATE_OVERHEAD_SECONDS = 120
# Of the command's timeout, what the node check run at admission may take once the boot check has finished.
ADMISSION_CHECK_SECONDS = 60
GATE_COMMAND_TIMEOUT = LAUNCH_HOOK_TIMEOUT - GATE_OVERHEAD_SECONDS
GATE_WAIT_SECONDS = GATE_COMMAND_TIMEOUT - ADMISSION_CHECK_SECONDS


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    """The hooks of every ESS node group; the scale-in hook waits the stack's checkpoint grace."""
    return GroupHooks(
        launch=Hook("node-check", "SCALE_OUT", LAUNCH_HOOK_TIMEOUT, "ABANDON"),
        terminate=Hook("checkpoint", "SCALE_IN", checkpoint_grace_seconds, "CONTINUE"),
    )
