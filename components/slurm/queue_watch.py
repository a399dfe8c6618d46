"""The queue watcher on the head node (a systemd timer, power_units.py): capacity follows the queue.

Why: in Slurm (22.05, 25.11 and 26.05 alike) a dynamic node exists only once it registers, and slurmctld never
resumes a node it does not know, so a job on the partition of a group at size 0 waits forever (pending for
"PartitionConfig", as the real daemons show). Each run reads the pending jobs (squeue) and the nodes (sinfo), and
raises each group's desired capacity by the nodes its partitions' jobs lack, within size.max. Nodes a job can use
already count against its need: the idle nodes of its partition's groups and the ones on their way (desired capacity
less the group's registered nodes). Desired capacity is read before Slurm's nodes: a node that registers in between
counts once, as registered rather than on its way, so two nodes booting at once never make the watcher ask twice. A
run that asks for more than the queue needed (a job that left meanwhile) costs an idle node until SuspendTime gives
it back.

Each run also deletes dead names: a node powered down (its instance given back before `scontrol delete`
succeeded), DOWN for power.GIVEN_BACK (resume found the name dead), or not responding after a spot interruption
drained it (spot_leave.py; its own deletion ran out of time).
"""

from __future__ import annotations

from . import controller
from .controller import NodeState, PendingJob
from .power import GIVEN_BACK, GroupCapacity, PowerConfig, group_of, nodes_by_group
from .spot_leave import SPOT_REASON

# Pending reasons more nodes can end (squeue.1 JOB REASON CODES): no node in the partition yet
# ("PartitionConfig", seen under 22.05 for a partition whose node sets are empty), none free ("Resources"), or
# jobs ahead take the free ones ("Priority"). A held job, a dependency or a begin time waits for something else.
CAPACITY_REASONS = frozenset({"PartitionConfig", "Resources", "Priority"})


def dead(state: NodeState) -> bool:
    """A name whose instance is gone: powered down (~), DOWN for GIVEN_BACK, or drained for a spot interruption
    and not responding (*)."""
    return (state.state.endswith("~") or (state.state.startswith("down") and state.reason == GIVEN_BACK)
            or (state.state.endswith("*") and state.reason == SPOT_REASON))


def wanted_capacity(config: PowerConfig, desired: dict[str, int], nodes: dict[str, NodeState],
                    jobs: list[PendingJob]) -> dict[str, int]:
    """The desired capacity per group that the pending jobs need (each group's as it is where none lack nodes)."""
    groups = {group.name: group for group in config.groups}
    # A node of no group (added by hand) is none of the watcher's business.
    live = {name: state for name, state in nodes.items()
            if not dead(state) and group_of(name, config.groups) is not None}
    by_group = nodes_by_group(list(live), config.groups)
    idle = {name: sum(live[f"{name}-{instance}"].state == "idle" for instance in ids)
            for name, ids in by_group.items()}
    spare = {name: idle.get(name, 0) + max(0, desired[name] - len(by_group.get(name, [])))
             for name in groups}
    target = dict(desired)
    for job in jobs:
        if job.reason not in CAPACITY_REASONS:
            continue
        # A job naming several partitions runs in the first that can take it: the first one named here.
        over = [groups[name] for name in config.partitions.get(job.partitions[0], [])]
        need = job.nodes
        for group in over:
            taken = min(need, spare[group.name])
            spare[group.name] -= taken
            need -= taken
        for group in over:
            added = min(need, group.max - target[group.name])
            target[group.name] += added
            need -= added
    return target


def watch(config: PowerConfig, capacity: GroupCapacity) -> dict[str, object]:
    """One run: delete the dead names, raise the groups the queue lacks nodes in; what it did."""
    desired = {group.name: capacity.desired(group.scaling_group) for group in config.groups}
    nodes = controller.node_states()
    jobs = controller.pending_jobs()
    gone = sorted(name for name, state in nodes.items() if dead(state) and group_of(name, config.groups) is not None)
    controller.delete_nodes(gone)
    target = wanted_capacity(config, desired, nodes, jobs)
    raised = {}
    for group in config.groups:
        if target[group.name] > desired[group.name]:
            capacity.set_desired(group.scaling_group, target[group.name])
            raised[group.name] = target[group.name]
    return {"deleted": gone, "raised": raised}

