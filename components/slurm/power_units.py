"""The head node's power files: power.json, ResumeProgram and SuspendProgram, and the queue watcher's systemd
service and timer. head_files.head_node_files adds them to the head node's files (path -> (mode, text)) and
enables POWER_UNITS."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import runtime
from .power import POWER_CONFIG, render_power_config
from .site import SlurmSite

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

UNITS = "/etc/systemd/system"
WATCH_SERVICE = "gpufleet-slurm-watch.service"
WATCH_TIMER = "gpufleet-slurm-watch.timer"
POWER_UNITS = (WATCH_TIMER,)
"""What the head node enables: the timer starts the service."""
# How often the queue watcher looks at the queue: a pending job waits at most this long before its nodes are asked
# for, next to minutes of boot and node check.
WATCH_SECONDS = 30


# slurmctld runs ResumeProgram and SuspendProgram with SLURM_CONF alone in their environment, no PATH (seen under
# 22.05.8, tests/components/slurm/test_slurm_power_daemons.py): the programs set one for Slurm's clients.
PROGRAM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _program(site: SlurmSite, action: str) -> str:
    # The node names come as the one argument (slurm.conf.5 ResumeProgram).
    return f'#!/bin/sh\nexport PATH={PROGRAM_PATH}\nexec {site.power_command} {action} "$1"\n'


def _watch_service(site: SlurmSite) -> str:
    return "\n".join([
        "[Unit]",
        "Description=gpufleet: Slurm capacity follows the queue",
        "After=slurmctld.service",
        "Requires=slurmctld.service",
        "",
        "[Service]",
        "Type=oneshot",
        # SlurmUser: scontrol delete and update need an operator; the head node's credentials are the instance's.
        f"User={site.slurm_user}",
        f"ExecStart={site.power_command} watch",
        "",
    ])


def _watch_timer() -> str:
    return "\n".join([
        "[Unit]",
        f"Description=gpufleet: Slurm queue watcher, every {WATCH_SECONDS} s",
        "",
        "[Timer]",
        f"OnBootSec={WATCH_SECONDS}s",
        f"OnUnitActiveSec={WATCH_SECONDS}s",
        f"Unit={WATCH_SERVICE}",
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ])


def power_unit_files(cluster: ResolvedCluster, site: SlurmSite) -> dict[str, tuple[str, str]]:
    """The head node's power files by path: (mode, text)."""
    return {
        POWER_CONFIG: ("0644", render_power_config(cluster)),
        site.resume_program: ("0755", _program(site, "resume")),
        site.suspend_program: ("0755", _program(site, "suspend")),
        f"{UNITS}/{WATCH_SERVICE}": ("0644", _watch_service(site)),
        f"{UNITS}/{WATCH_TIMER}": ("0644", _watch_timer()),
    }


def refuse_elastic_without_power_program(cluster: ResolvedCluster) -> None:
    """A group that scales with the queue (size.min < size.max) needs the power program on the head node, which the
    image carries only where the lock pins its cloud's SDK (slurm.power_sdk; images/install/slurm-power.sh installs
    nothing otherwise): without it slurmctld's ResumeProgram and the queue watcher are missing and such a group never
    grows. A fixed-size group (min = max) needs neither."""
    profile = cluster.profile
    if profile is None or profile.slurm is None or profile.slurm.power_wheels(cluster.spec.cloud):
        return
    for index, group in enumerate(cluster.groups):
        size = group.spec.size
        if size.min != size.max:
            runtime.refuse(f"node_groups[{index}].size", (
                f"group {group.name} scales between {size.min} and {size.max} nodes with Slurm's queue, but the "
                f"image's lock profile pins no SDK for the head node's power program on {cluster.spec.cloud} "
                f"(images/lock.yaml slurm.power_sdk.{cluster.spec.cloud}): set size.min equal to size.max"))
