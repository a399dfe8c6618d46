"""What the head node's power programs ask of slurmctld and tell it, through Slurm's own clients (scontrol, squeue,
sinfo of 22.05, their formatted output), with the SLURM_CONF of the environment (the head node's default path)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PendingJob:
    """A pending job as squeue shows it."""

    job_id: str
    partitions: tuple[str, ...]
    """The partitions it may run in, in the order it named them."""
    nodes: int
    """The least number of nodes it asks for (squeue %D of a pending job)."""
    reason: str


@dataclass(frozen=True)
class NodeState:
    """A node as sinfo shows it: the compact state (idle, alloc, idle~ powered down, idle% powering down, mix#
    powering up, down*...) and the reason an administrator or program gave."""

    state: str
    reason: str


def _client(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def expand_hostlist(hostlist: str) -> list[str]:
    """The node names of a Slurm hostlist expression, as Slurm itself expands them."""
    return _client("scontrol", "show", "hostnames", hostlist).split()


def pending_jobs() -> list[PendingJob]:
    """Every pending job, in squeue's order (priority first)."""
    found = []
    for line in _client("squeue", "-h", "-t", "PENDING", "-o", "%i|%P|%D|%r").splitlines():
        job_id, partitions, nodes, reason = line.split("|", 3)
        found.append(PendingJob(job_id, tuple(partitions.split(",")), int(nodes), reason))
    return found


def node_states() -> dict[str, NodeState]:
    """Every node Slurm knows, by name (sinfo -N lists a node once per partition; one entry each here)."""
    found = {}
    for line in _client("sinfo", "-h", "-N", "-o", "%N|%t|%E").splitlines():
        name, state, reason = line.split("|", 2)
        found[name] = NodeState(state, reason)
    return found


# scontrol's answer for a name slurmctld does not know (22.05): already deleted, by another program or the node.
UNKNOWN_NODE = "Invalid node name specified"


def _each_known(names: Sequence[str], *argv: str) -> None:
    """`scontrol ARGV NodeName=<name>` per name, a name Slurm no longer knows passed over."""
    for name in names:
        done = subprocess.run(["scontrol", *argv[:1], f"NodeName={name}", *argv[1:]], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0 and UNKNOWN_NODE not in done.stderr:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)


def delete_nodes(names: Sequence[str]) -> None:
    """Forget these dynamic nodes (scontrol.1 of 22.05: "Nodes can't be deleted if they are in a reservation or
    have jobs on running")."""
    _each_known(names, "delete")


def down_nodes(names: Sequence[str], reason: str) -> None:
    """Mark these nodes DOWN (scontrol.1: "Stop all running and suspended jobs"; a batch job is requeued)."""
    _each_known(names, "update", "State=DOWN", f"Reason={reason}")
