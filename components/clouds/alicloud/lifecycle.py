"""The ESS lifecycle hooks of a node group: the one source of their names, transitions and timeouts.

Scale-out: held while the node check gates the node. Completing a hook needs its LifecycleActionToken (ESS API
CompleteLifecycleAction), which ESS gives to the hook's notification target, never to the instance; so the hook
notifies the cluster's scale-out gate, an OOS template (scale_out_gate.py) that runs the node check on the new
nodes through Cloud Assistant and completes the action: CONTINUE when they pass, ABANDON when one fails. The
default result is ABANDON too: a node whose check never reported in time (no Cloud Assistant agent, a boot
slower than the hold, OOS unable to run) is released rather than joining unchecked.

Scale-in: every removal (an idle scale-in, a health replacement, a spot reclaim ESS acts on) notifies the
cluster's checkpoint runbook, a second OOS template (scale_out_gate.py) that runs the stack's checkpoint hook on the
leaving nodes through Cloud Assistant and then completes the action with CONTINUE. The hook holds a node for the
stack's checkpoint grace plus what OOS needs around the command, so the checkpoint gets its whole grace on the
node, as the spot watcher gives it; its default result is CONTINUE too: a runbook that never reports only delays
the release.
"""

from __future__ import annotations

from ..hooks import GroupHooks, Hook
from ..hooks import node_check_retry_seconds as retry_inside

LAUNCH_HOOK_TIMEOUT = 900
# Of the scale-out hold, what OOS needs around the command: starting the execution, delivering the command to
# the Cloud Assistant agent and calling CompleteLifecycleAction before the hook's default result applies.
GATE_OVERHEAD_SECONDS = 120
# Of the command's timeout, what the node check run at admission may take once the boot check has finished.
ADMISSION_CHECK_SECONDS = 60
GATE_COMMAND_TIMEOUT = LAUNCH_HOOK_TIMEOUT - GATE_OVERHEAD_SECONDS
GATE_WAIT_SECONDS = GATE_COMMAND_TIMEOUT - ADMISSION_CHECK_SECONDS
# Of the scale-in hold beyond the checkpoint grace: starting the execution, delivering the command, the command's
# own margin and CompleteLifecycleAction. ESS takes a HeartbeatTimeout of 30-21600 s (API CreateLifecycleHook); the
# stack's grace is at most 7200 s (spec), so the hold always fits.
CHECKPOINT_OVERHEAD_SECONDS = 120
# Of that overhead, what the command may run past the grace: reading the node's settings and waiting on the lock
# the spot watcher holds while it runs the same checkpoint.
CHECKPOINT_COMMAND_MARGIN = 30


def node_check_retry_seconds(mig: bool) -> int:
    """The boot check's retry window inside the scale-out hold, which starts at launch and must also fit the gate's
    admission check and OOS's work around it (hooks.node_check_retry_seconds); the gate waits for the boot check
    (GATE_WAIT_SECONDS) past the end of this window."""
    return retry_inside(LAUNCH_HOOK_TIMEOUT, GATE_OVERHEAD_SECONDS + ADMISSION_CHECK_SECONDS, mig)


def checkpoint_command_timeout(checkpoint_grace_seconds: int) -> int:
    """How long Cloud Assistant lets the scale-in checkpoint run on a leaving node."""
    return checkpoint_grace_seconds + CHECKPOINT_COMMAND_MARGIN


def group_hooks(checkpoint_grace_seconds: int) -> GroupHooks:
    """The hooks of every ESS node group; the scale-in hook holds a node for the stack's checkpoint grace and the
    runbook's overhead."""
    return GroupHooks(
        launch=Hook("node-check", "SCALE_OUT", LAUNCH_HOOK_TIMEOUT, "ABANDON"),
        terminate=Hook("checkpoint", "SCALE_IN", checkpoint_grace_seconds + CHECKPOINT_OVERHEAD_SECONDS, "CONTINUE"),
    )
