"""Slurm's HealthCheckProgram on every node: the node check again, draining the node when it fails.

slurm.conf.5 (22.05.8) HealthCheckProgram: runs as root on every node, killed after 60 s, and "Any action to be
taken must be explicitly performed by the program" (the man page's own example: scontrol update NodeName=foo
State=drain Reason=...). slurmd names the node in SLURMD_NODENAME (seen in the program's environment under 22.05.8).
A drained node takes no new job; once no job is left on it (squeue -w), the program leaves the bootstrap's unhealthy
mark, on which gpu-health takes the node out through the cloud's health path (AWS SetInstanceHealth, Azure
Application Health with automatic repairs, Alibaba ESS SetInstanceHealth) and the group launches a replacement; the
queue watcher deletes the name once the instance is gone. A running job is never cut short by the replacement.
gpu-health runs with monitoring.gpu_metrics on; without it a failing node stays drained for an operator.
scontrol and squeue find the configuration as the node's clients do: a configless node has no slurm.conf of its
own, only slurmd's cache, which slurmd links at /run/slurm/conf and names in its children's SLURM_CONF (seen under
22.05.8); a fixed path to slurm.conf would fail there and leave a failing node undrained.
"""

from __future__ import annotations

import shlex

from .site import SlurmSite

DRAIN_REASON = "gpufleet node check failed"


def render_health_check(site: SlurmSite) -> str:
    """The health check program (a shell script)."""
    return "\n".join([
        "#!/bin/sh",
        f"# Runs {site.node_check}; when it fails, drains this node and, once no job is left on it, marks it",
        "# unhealthy for the cloud's health path to replace.",
        f"if {site.node_check}; then exit 0; fi",
        f"scontrol update NodeName=\"$SLURMD_NODENAME\" State=DRAIN "
        f"Reason={shlex.quote(DRAIN_REASON)}",
        # An squeue that fails says nothing of the jobs: the node stays, drained, until a later run can tell.
        'if jobs=$(squeue -h -w "$SLURMD_NODENAME" -o %A) && [ -z "$jobs" ]; then',
        f"  touch {shlex.quote(site.unhealthy_mark)}",
        "fi",
        "exit 1",
        "",
    ])
