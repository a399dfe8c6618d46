"""Slurm's ResumeProgram and SuspendProgram on the head node: the capacity of the group behind each node.

slurm.conf.5 (22.05.8) ResumeProgram / SuspendProgram: run as SlurmUser with the node names as their one argument,
in Slurm's hostlist expression format (expanded here by the real `scontrol show hostnames`). A node's name starts
with its group's (registration.node_name), so the group follows from the name. Resuming raises the group's desired
capacity by the nodes asked for, never past size.max; suspending gives those very instances back (the name ends in
the instance's id) while the group stays at or above size.min, so a busy node is never the one that goes. The cloud
call sits behind GroupCapacity, one implementation per cloud (components/clouds/C/slurm_capacity.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster


class GroupCapacity(Protocol):
    """A cloud's scaling groups, as the programs change them."""

    def desired(self, scaling_group: str) -> int:
        """The group's desired capacity now."""
        ...

    def set_desired(self, scaling_group: str, desired: int) -> None:
        """Ask for `desired` nodes."""
        ...

    def give_back(self, scaling_group: str, instance_ids: Sequence[str]) -> None:
        """Remove these instances, the desired capacity lowered by as many."""
        ...


@dataclass(frozen=True)
class PowerGroup:
    """What the programs know of one node group (the head node's power.json)."""

    name: str
    scaling_group: str
    min: int
    max: int


def power_groups(cluster: ResolvedCluster) -> list[PowerGroup]:
    """The groups the programs scale, with their scaling group's name and size bounds."""
    return [PowerGroup(group.name, group.names["scaling_group"], group.spec.size.min, group.spec.size.max)
            for group in cluster.groups]


def render_power_config(cluster: ResolvedCluster) -> str:
    """power.json: the cloud, the region and the groups, for the programs on the head node."""
    return json.dumps({"cloud": cluster.spec.cloud, "region": cluster.spec.region,
                       "groups": [vars(group) for group in power_groups(cluster)]}, indent=2, sort_keys=True) + "\n"


# Where the head node keeps power.json (beside slurm.conf).
POWER_CONFIG = "/etc/slurm/gpufleet-power.json"


def expand_hostlist(hostlist: str, scontrol: str = "scontrol") -> list[str]:
    """The node names of a Slurm hostlist expression, as Slurm itself expands them."""
    done = subprocess.run([scontrol, "show", "hostnames", hostlist], capture_output=True, text=True, check=True)
    return done.stdout.split()


def nodes_by_group(names: Sequence[str], groups: Sequence[PowerGroup]) -> dict[str, list[str]]:
    """Instance ids per group, from node names `<group>-<instance id>` (the longest group name that fits first, so
    a group `h100` never takes the nodes of `h100-spot`)."""
    found: dict[str, list[str]] = {}
    by_length = sorted(groups, key=lambda group: len(group.name), reverse=True)
    for name in names:
        group = next((g for g in by_length if name.startswith(f"{g.name}-")), None)
        if group is None:
            raise ValueError(f"node {name} belongs to no node group ({', '.join(g.name for g in groups)})")
        found.setdefault(group.name, []).append(name[len(group.name) + 1:])
    return found


def resume(names: Sequence[str], groups: Sequence[PowerGroup], capacity: GroupCapacity) -> dict[str, int]:
    """Raise each group's desired capacity by its nodes asked for, up to size.max; the new desired per group."""
    by_name = {group.name: group for group in groups}
    changed = {}
    for group_name, ids in nodes_by_group(names, groups).items():
        group = by_name[group_name]
        now = capacity.desired(group.scaling_group)
        wanted = min(group.max, now + len(ids))
        if wanted != now:
            capacity.set_desired(group.scaling_group, wanted)
        changed[group_name] = wanted
    return changed


def suspend(names: Sequence[str], groups: Sequence[PowerGroup], capacity: GroupCapacity) -> dict[str, list[str]]:
    """Give back each group's idle instances named, keeping size.min; the instances given back per group."""
    by_name = {group.name: group for group in groups}
    removed = {}
    for group_name, ids in nodes_by_group(names, groups).items():
        group = by_name[group_name]
        spare = max(0, capacity.desired(group.scaling_group) - group.min)
        going = ids[:spare]
        if going:
            capacity.give_back(group.scaling_group, going)
        removed[group_name] = going
    return removed


def run_program(args: Sequence[str], capacity_in: Callable[[str], GroupCapacity],
                config_path: str | None = None) -> int:
    """`resume HOSTLIST` or `suspend HOSTLIST` (the two programs are this one with the action first); the cloud's
    GroupCapacity is made for the region power.json names. Prints what it changed, for slurmctld's log."""
    if len(args) != 2 or args[0] not in ("resume", "suspend"):
        print("usage: resume|suspend HOSTLIST")
        return 2
    config = json.loads(Path(config_path or POWER_CONFIG).read_text(encoding="utf-8"))
    groups = [PowerGroup(**group) for group in config["groups"]]
    capacity = capacity_in(config["region"])
    names = expand_hostlist(args[1])
    done = resume(names, groups, capacity) if args[0] == "resume" else suspend(names, groups, capacity)
    print(json.dumps({args[0]: done}, sort_keys=True))
    return 0
