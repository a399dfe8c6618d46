"""Slurm's HealthCheckProgram on every node: the node check again, draining the node when it fails.

slurm.conf.5 (22.05.8) HealthCheckProgram: runs as root on every node, killed after 60 s, and "Any action to be
taken must be explicitly performed by the program" (the man page's own example: scontrol update NodeName=foo
State=drain Reason=...). slurmd names the node in SLURMD_NODENAME (seen in the program's environment under 22.05.8).
A drained node takes no new job; the cloud's health path replaces it (the next slice). scontrol finds the
configuration as the node's clients do: a configless node has no slurm.conf of its own, only slurmd's cache, which
slurmd links at /run/slurm/conf and names in its children's SLURM_CONF (seen under 22.05.8); a fixed path to
slurm.conf would fail there and leave a failing node undrained.
"""

from __future__ import annotations

import shlex

from .site import SlurmSite

DRAIN_REASON = "gpufleet node check failed"


def render_health_check(site: SlurmSite) -> str:
    """The health check program (a shell script)."""
    return "\n".join([
        "#!/bin/sh",
        f"# Runs {site.node_check} and drains this node when it fails.",
        f"if {site.node_check}; then exit 0; fi",
        f"scontrol update NodeName=\"$SLURMD_NODENAME\" State=DRAIN "
        f"Reason={shlex.quote(DRAIN_REASON)}",
        "exit 1",
        "",
    ])
