"""More dynamic nodes on this one machine than the first (tests/slurm_daemons.py starts that): each further slurmd
reads a copy of the head's configuration whose SlurmdPort is free, as the first node's slurmd holds the cluster's
and a registration line cannot carry a Port= (slurmd.8, --conf)."""

from __future__ import annotations

import shutil
import subprocess

from local_registry import free_port
from slurm_daemons import SlurmCluster, daemon_pid, wait_for

from components.slurm.registration import slurmd_registration
from gpufleet.clouds.backend import ResolvedGroup


def start_node_on_own_port(running: SlurmCluster, group: ResolvedGroup, instance_id: str) -> str:
    """Another dynamic node of `group`, registered with its rendered registration line; its node name."""
    etc = running.root / f"etc-{instance_id}"
    shutil.copytree(running.root / "etc", etc)
    conf = (etc / "slurm.conf").read_text()
    (etc / "slurm.conf").write_text(conf.replace(f"SlurmdPort={running.site.slurmd_port}", f"SlurmdPort={free_port()}"))
    argv = slurmd_registration(group, group.known_types[0], group.zones[0], instance_id)
    subprocess.run(argv, env={**running.env, "SLURM_CONF": str(etc / "slurm.conf")}, check=True, capture_output=True,
                   text=True, timeout=30)
    name = argv[argv.index("-N") + 1]
    running.processes.append(daemon_pid(running.root / f"run/slurmd-{name}.pid"))
    wait_for(f"node {name}", lambda: "State=IDLE" in running.node(name))
    return name
