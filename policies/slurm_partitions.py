"""Which node groups each Slurm partition takes, read from a rendered slurm.conf.

gpufleet's slurm.conf (components/slurm/slurm_conf.py) makes every node group a node set of the nodes that register
with the group's name as a feature (`NodeSet=<group> Feature=<group>`), and a partition names node sets
(`PartitionName=<name> Nodes=<sets>`). slurm.conf.5 (22.05): keywords are case-insensitive, `#` starts a comment,
`PartitionName=DEFAULT` only sets defaults, `Nodes=ALL` takes every node; a node set may also list nodes by name
(`Nodes=`), and a node's name starts with its group's (components/slurm/registration.py node_name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .cloud_init import file_named
from .meta import Node


def _settings(line: str) -> dict[str, str]:
    """`Key=Value Key2=Value2` as {key (lower case): value}."""
    found = {}
    for word in line.split("#", 1)[0].split():
        key, equals, value = word.partition("=")
        if equals:
            found[key.lower()] = value
    return found


def _group_of(name: str, groups: Iterable[str]) -> str | None:
    """The group a node name belongs to (`<group>-<instance id>`), the longest group name that fits first."""
    return next((g for g in sorted(groups, key=len, reverse=True) if name.startswith(f"{g}-")), None)


def partition_groups(slurm_conf: str, groups: Iterable[str]) -> dict[str, list[str]]:
    """partition -> the node groups (of `groups`) whose nodes it may run jobs on, in the order the file names them."""
    known = list(groups)
    lines = [_settings(line) for line in slurm_conf.splitlines()]
    node_sets: dict[str, list[str]] = {}
    for settings in lines:
        if "nodeset" in settings:
            members = [f for f in settings.get("feature", "").split(",") if f in known]
            members += [g for n in settings.get("nodes", "").split(",") if n and (g := _group_of(n, known))]
            node_sets[settings["nodeset"]] = members
    partitions: dict[str, list[str]] = {}
    for settings in lines:
        name = settings.get("partitionname")
        if name is None or name.upper() == "DEFAULT":
            continue
        taken: list[str] = []
        for entry in settings.get("nodes", "").split(","):
            if entry.upper() == "ALL":
                taken += known
            elif entry in node_sets:
                taken += node_sets[entry]
            elif entry and (group := _group_of(entry, known)):
                taken.append(group)
        partitions[name] = list(dict.fromkeys(taken))
    return partitions


def fabric_spans(heads: Iterable[Node], files_of: Callable[[Node], Any], groups: Iterable[str],
                 fabrics_of: Callable[[str], list[str]], required: Iterable[str] | None
                 ) -> Iterator[tuple[Node, str, str]]:
    """(head, partition, "group (fabric, ...), ...") for each partition of a head node's slurm.conf (`files_of` reads
    what its cloud-config writes) whose judged groups (those in `required`, else every one) sit on more than one
    fabric; `fabrics_of(group)` lists a group's fabrics (none where it runs no RDMA)."""
    known, wanted = list(groups), None if required is None else set(required)
    for head in heads:
        files = files_of(head)
        slurm_conf = file_named(files, "slurm.conf") if isinstance(files, dict) else None
        for partition, taken in partition_groups(slurm_conf or "", known).items():
            judged = [group for group in taken if wanted is None or group in wanted]
            fabrics = {group: found for group in judged if (found := fabrics_of(group))}
            if len({fabric for found in fabrics.values() for fabric in found}) > 1:
                yield head, partition, ", ".join(f"{group} ({', '.join(found)})" for group, found in fabrics.items())
