"""The lifecycle hooks' node commands: what a cloud's run-command service runs on a node that a scaling activity
adds (the gate, to admit or release it) or removes (the checkpoint, before it goes).

Where the lifecycle action token never reaches the node (Alibaba Cloud ESS hands it to the hook's
notification target only), the node cannot complete its own launch hook as the AWS scripts do. The hook then
notifies a runbook (an OOS template on Alibaba Cloud) that runs this command on the node and completes the
action from its exit status: 0 continue, anything else abandon. The command waits for the boot node check of
gpufleet-health.service and runs the node check again (scripts/scale-out-gate.sh). The scale-in hook's runbook
runs `checkpoint_command` the same way: the stack's checkpoint hook, once, then the runbook completes the removal
(scripts/scale-in-checkpoint.sh).
"""

from __future__ import annotations

from .cloud_init import node_script
from .errors import BootstrapError


def gate_command(wait_seconds: int) -> str:
    """The gate as one bash script; it waits at most `wait_seconds` for the boot node check to finish."""
    if not isinstance(wait_seconds, int) or isinstance(wait_seconds, bool) or wait_seconds < 1:
        raise BootstrapError(f"gate wait_seconds: must be an integer >= 1, got {wait_seconds!r}")
    return f"#!/bin/bash\nGPUFLEET_GATE_SECONDS={wait_seconds}\n{node_script('scale-out-gate.sh')}"


def checkpoint_command() -> str:
    """The scale-in checkpoint as one bash script; the node's settings bound it by the stack's checkpoint grace."""
    return f"#!/bin/bash\n{node_script('scale-in-checkpoint.sh')}"
