"""slurm.conf of a VM cluster, from the resolved cluster, for the image's Slurm 25.11 (the tests run Ubuntu
resolute's 25.11.2: tests/slurm_rootfs.py).

Settings and the man page (slurm.conf.5; first read in 22.05.8, each still there in 25.11) each relies on:
- SlurmctldParameters=enable_configless: nodes fetch slurm.conf and gres.conf from slurmctld (`slurmd
  --conf-server`, the configless page of 22.05), so only the head node carries them.
- SrunPortRange: srun's ports on a fixed range the head node's firewall admits from the nodes (site.py).
- AuthType=auth/munge: every daemon and client authenticates with the cluster's munge key.
- SelectType=select/cons_tres: the dynamic nodes page ("Dynamic nodes are only supported with cons_tres") and GPU
  GRES allocation per job; GresTypes=gpu declares the GRES the nodes register.
- MaxNodeCount: "Increase MaxNodeCount to accommodate dynamically created nodes with dynamic node registrations";
  the sum of the groups' size.max, the most nodes the cluster can hold.
- TreeWidth=65533: nodes are known by address, not DNS (the FUTURE-nodes note: disable fanout by a high TreeWidth).
- NodeSet=<group> Feature=<group> and PartitionName=... Nodes=<node sets>: the dynamic nodes page ("Partition
  Assignment": a node registering with a feature joins the node sets and partitions that name it).
- ReturnToService=2: a DOWN node returns once it registers with a valid configuration (a resumed node that reboots
  is DOWN for "unexpected reboot" otherwise); a drained node stays drained.
- HealthCheckProgram / HealthCheckInterval: the node check again on every node; the program drains a failing node
  itself ("Any action to be taken must be explicitly performed by the program"), health_check.py.
- SuspendTime / SuspendProgram / ResumeProgram / ResumeTimeout: power saving; SuspendTime in seconds from the
  stack's suspend_after_minutes, the programs in power.py.
- TopologyPlugin=topology/tree: a leaf switch per fabric group in topology.conf, each node joining its own as it
  registers (topology.py), so a multi-node job stays inside one fabric (22.05 could not: it took neither an empty
  switch nor a node's Topology=). Partitions stay as they were: an `rdma: required` group gets a partition of its
  own (gpufleet/stackfile/slurm_checks.py), and every group is a node set of its nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.stackfile.slurm import DEFAULT_SUSPEND_MINUTES

from .site import SlurmSite

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

# Seconds a resumed node has to boot, pass the node check and register before slurmctld marks it DOWN and requeues
# its jobs (ResumeTimeout; default 60 s): within AWS's launch hook budget of 900 s plus the boot itself.
RESUME_TIMEOUT_SECONDS = 1200
# Seconds the suspend program has to give a node back (SuspendTimeout; default 30 s).
SUSPEND_TIMEOUT_SECONDS = 120


def cluster_name(cluster: ResolvedCluster) -> str:
    """ClusterName: the stack's cluster and environment."""
    return f"{cluster.spec.name}-{cluster.spec.environment}"


def render_slurm_conf(cluster: ResolvedCluster, site: SlurmSite) -> str:
    """The cluster's slurm.conf: the same file on the head node and every node."""
    scheduler = cluster.spec.scheduler
    minutes = scheduler.suspend_after_minutes or DEFAULT_SUSPEND_MINUTES
    partitions = scheduler.partitions_over([group.name for group in cluster.groups])
    lines = [
        f"ClusterName={cluster_name(cluster)}",
        f"SlurmctldHost={site.controller_host}({site.controller_address})",
        f"SlurmctldPort={site.slurmctld_port}",
        f"SlurmdPort={site.slurmd_port}",
        "SlurmctldParameters=enable_configless",
        f"SrunPortRange={site.srun_ports[0]}-{site.srun_ports[1]}",
        f"SlurmUser={site.slurm_user}",
        "AuthType=auth/munge",
        f"AuthInfo=socket={site.munge_socket}",
        f"StateSaveLocation={site.state_dir}",
        f"SlurmdSpoolDir={site.spool_dir}/%n",
        f"SlurmctldPidFile={site.run_dir}/slurmctld.pid",
        f"SlurmdPidFile={site.run_dir}/slurmd-%n.pid",
        f"SlurmctldLogFile={site.log_dir}/slurmctld.log",
        f"SlurmdLogFile={site.log_dir}/slurmd-%n.log",
        f"ProctrackType={site.process_tracking}",
        f"TaskPlugin={site.task_plugin}",
        "SelectType=select/cons_tres",
        "GresTypes=gpu",
        f"MaxNodeCount={sum(group.spec.size.max for group in cluster.groups)}",
        "TreeWidth=65533",
        "TopologyPlugin=topology/tree",
        "ReturnToService=2",
        f"HealthCheckProgram={site.health_check_program}",
        f"HealthCheckInterval={site.health_check_seconds}",
        f"SuspendTime={minutes * 60}",
        f"SuspendProgram={site.suspend_program}",
        f"ResumeProgram={site.resume_program}",
        f"SuspendTimeout={SUSPEND_TIMEOUT_SECONDS}",
        f"ResumeTimeout={RESUME_TIMEOUT_SECONDS}",
        *(f"NodeSet={group.name} Feature={group.name}" for group in cluster.groups),
        *(f"PartitionName={name} Nodes={','.join(groups)} State=UP MaxTime=INFINITE"
          + (" Default=YES" if index == 0 else "")
          for index, (name, groups) in enumerate(partitions.items())),
    ]
    return "\n".join(lines) + "\n"
