"""Slurm's ResumeProgram and SuspendProgram on the head node: the capacity of the group behind each node.

slurm.conf.5 (22.05.8) ResumeProgram / SuspendProgram: run as SlurmUser with the node names as their one argument,
in Slurm's hostlist expression format (expanded here by the real `scontrol show hostnames`). A node's name starts
with its group's (registration.node_name), so the group follows from the name. The cloud call sits behind
GroupCapacity, one implementation per cloud (components/clouds/C/slurm_capacity.py).

Under Slurm (22.05, 25.11 and 26.05 alike) a dynamic node's name lives only as long as its instance, as the real
daemons show (tests/components/slurm/test_slurm_power_daemons.py):
- suspending gives the named instances back and deletes their names (`scontrol delete` is accepted while the node
  is powering down). A powered-down name kept instead would come back only through ResumeProgram, and the fresh
  instance registers under another name: the job would wait ResumeTimeout for a node that never answers. Even an
  instance that stays (the group at size.min) cannot keep its name: 22.05 does not resume a powered-down node whose
  slurmd still runs (it stays powering up), SuspendExcNodes' counts take no dynamic node and State=RESUME from the
  program does not cancel the power down. So an instance at the floor is replaced: removed without lowering the
  desired capacity, the group launches a fresh one, which registers under its own name;
- resuming (a powered-down name a job picked before its deletion) raises the desired capacity by a fresh node per
  name, within size.max, and marks the dead names DOWN, so the job is requeued now instead of after ResumeTimeout;
  the queue watcher (queue_watch.py) deletes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from . import controller

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

# The reason resume gives the dead names it marks DOWN; the queue watcher deletes nodes down for it.
GIVEN_BACK = "gpufleet: instance given back"


class GroupCapacity(Protocol):
    """A cloud's scaling groups, as the programs change them."""

    def desired(self, scaling_group: str) -> int:
        """The group's desired capacity now."""
        ...

    def set_desired(self, scaling_group: str, desired: int) -> None:
        """Ask for `desired` nodes."""
        ...

    def give_back(self, scaling_group: str, instance_ids: Sequence[str], lower_desired: bool) -> None:
        """Remove these instances; with lower_desired the desired capacity drops by as many, else the group
        launches as many fresh ones."""
        ...


@dataclass(frozen=True)
class PowerGroup:
    """What the programs know of one node group (the head node's power.json)."""

    name: str
    scaling_group: str
    min: int
    max: int


@dataclass(frozen=True)
class PowerConfig:
    """power.json: the cloud, its region, the groups and the partitions over them."""

    cloud: str
    region: str
    groups: tuple[PowerGroup, ...]
    partitions: dict[str, list[str]]


def power_config(cluster: ResolvedCluster) -> PowerConfig:
    """The groups the programs scale, with their scaling group's name and size bounds, and the partitions."""
    groups = tuple(PowerGroup(group.name, group.names["scaling_group"], group.spec.size.min, group.spec.size.max)
                   for group in cluster.groups)
    partitions = cluster.spec.scheduler.partitions_over([group.name for group in cluster.groups])
    return PowerConfig(cluster.spec.cloud, cluster.spec.region, groups, partitions)


def render_power_config(cluster: ResolvedCluster) -> str:
    """power.json, for the programs on the head node."""
    config = power_config(cluster)
    return json.dumps({"cloud": config.cloud, "region": config.region, "partitions": config.partitions,
                       "groups": [vars(group) for group in config.groups]}, indent=2, sort_keys=True) + "\n"


def read_power_config(path: str) -> PowerConfig:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return PowerConfig(raw["cloud"], raw["region"], tuple(PowerGroup(**group) for group in raw["groups"]),
                       raw["partitions"])


# Where the head node keeps power.json (beside slurm.conf).
POWER_CONFIG = "/etc/slurm/gpufleet-power.json"


def group_of(name: str, groups: Sequence[PowerGroup]) -> PowerGroup | None:
    """The group of node name `<group>-<instance id>` (the longest group name that fits, so a group `h100` never
    takes the nodes of `h100-spot`); None for a node of no group."""
    fitting = [group for group in groups if name.startswith(f"{group.name}-")]
    return max(fitting, key=lambda group: len(group.name), default=None)


def nodes_by_group(names: Sequence[str], groups: Sequence[PowerGroup]) -> dict[str, list[str]]:
    """Instance ids per group, from node names `<group>-<instance id>`."""
    found: dict[str, list[str]] = {}
    for name in names:
        group = group_of(name, groups)
        if group is None:
            raise ValueError(f"node {name} belongs to no node group ({', '.join(g.name for g in groups)})")
        found.setdefault(group.name, []).append(name[len(group.name) + 1:])
    return found


def resume(names: Sequence[str], groups: Sequence[PowerGroup], capacity: GroupCapacity) -> dict[str, int]:
    """A fresh node per dead name asked for, up to size.max, and the names DOWN; the new desired per group."""
    by_name = {group.name: group for group in groups}
    changed = {}
    for group_name, ids in nodes_by_group(names, groups).items():
        group = by_name[group_name]
        now = capacity.desired(group.scaling_group)
        wanted = min(group.max, now + len(ids))
        if wanted != now:
            capacity.set_desired(group.scaling_group, wanted)
        changed[group_name] = wanted
    controller.down_nodes(names, GIVEN_BACK)
    return changed


def suspend(names: Sequence[str], groups: Sequence[PowerGroup],
            capacity: GroupCapacity) -> dict[str, dict[str, list[str]]]:
    """Give back each group's idle instances named down to size.min, replace those at the floor, delete every name;
    the instances given back and replaced per group."""
    by_name = {group.name: group for group in groups}
    done = {}
    for group_name, ids in nodes_by_group(names, groups).items():
        group = by_name[group_name]
        spare = max(0, capacity.desired(group.scaling_group) - group.min)
        going, replaced = ids[:spare], ids[spare:]
        if going:
            capacity.give_back(group.scaling_group, going, lower_desired=True)
        if replaced:
            capacity.give_back(group.scaling_group, replaced, lower_desired=False)
        done[group_name] = {"given_back": going, "replaced": replaced}
    controller.delete_nodes(names)
    return done
