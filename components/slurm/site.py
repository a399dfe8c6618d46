"""Where Slurm's daemons keep their state and find the programs gpufleet renders: the head node's layout by default,
a temporary directory in the tests that start the real daemons."""

from __future__ import annotations

from dataclasses import dataclass

# slurm.conf.5 (22.05) SlurmctldPort / SlurmdPort: the defaults 6817 and 6818.
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
# Where a configless slurmd (22.05) links the configuration it fetched from slurmctld: a node's clients outside
# slurmd's children (the spot watcher's scontrol) read slurm.conf there (tests/slurm_daemons.py sees it).
CONFIGLESS_CONF_DIR = "/run/slurm/conf"
# SrunPortRange (slurm.conf.5 22.05: srun's listening ports, which slurmstepd on the nodes connects back to; without
# it an ephemeral port no firewall can name): the man page's example range, which the head node's firewall admits
# from the nodes.
SRUN_PORTS = (60001, 63000)


@dataclass(frozen=True)
class SlurmSite:
    """Host, ports, user and paths of one Slurm installation."""

    controller_host: str
    """The head node's short host name (SlurmctldHost)."""
    controller_address: str
    """Its private address, so nodes reach it without DNS."""
    slurm_user: str = "slurm"
    etc_dir: str = "/etc/slurm"
    state_dir: str = "/var/spool/slurmctld"
    spool_dir: str = "/var/spool/slurmd"
    run_dir: str = "/run/slurm"
    log_dir: str = "/var/log/slurm"
    munge_socket: str = "/run/munge/munge.socket.2"
    program_dir: str = "/usr/local/lib/gpufleet/slurm"
    """Where the head node keeps the resume and suspend programs and every node the health check program."""
    power_command: str = "/usr/local/bin/gpufleet-slurm-power"
    """The head node's power program (components/clouds/slurm_power.py), which the image's bake installs with its
    cloud's SDK (images/install/slurm-power.sh)."""
    device_dir: str = "/dev"
    """Where the GPU device files are (nvidia0...); a directory of stand-in devices in the tests."""
    node_gres_conf: str = "/etc/gpufleet/slurm-gres.conf"
    """The node's own gres.conf, which its boot writes (scripts/slurm-gres.py) and the served gres.conf includes (an
    empty one on the head node): gres_conf.py says why."""
    node_check: str = "gpufleet-nodecheck --expect /etc/gpufleet/expect.json --format text"
    """The node check command the health check program runs (the image's, as at boot)."""
    unhealthy_mark: str = "/run/gpufleet/unhealthy"
    """The node bootstrap's mark of a failed node check (components/bootstrap/scripts/health.sh): gpu-health takes a
    node that carries it out through the cloud's health path, and the group replaces it."""
    health_check_seconds: int = 300
    """HealthCheckInterval: how often every node runs the node check again (slurm.conf.5: 0 disables it)."""
    process_tracking: str = "proctrack/cgroup"
    """ProctrackType: cgroups on the nodes; the tests' daemons run in a container without a cgroup of their own."""
    task_plugin: str = "task/cgroup,task/affinity"
    slurmctld_port: int = SLURMCTLD_PORT
    slurmd_port: int = SLURMD_PORT
    srun_ports: tuple[int, int] = SRUN_PORTS

    @property
    def health_check_program(self) -> str:
        return f"{self.program_dir}/health-check"

    @property
    def resume_program(self) -> str:
        return f"{self.program_dir}/resume"

    @property
    def suspend_program(self) -> str:
        return f"{self.program_dir}/suspend"
