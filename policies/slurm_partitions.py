"""Which node groups each Slurm partition takes, read from a rendered slurm.conf.

gpufleet's slurm.conf (components/slurm/slurm_conf.py) makes every node group a node set of the nodes that register
with the group's name as a feature (`NodeSet=<group> Feature=<group>`), and a partition names node sets
(`PartitionName=<name> Nodes=<sets>`). slurm.conf.5 (22.05): keywords are case-insensitive, `#` starts a comment,
`PartitionName=DEFAULT` only sets defaults, `Nodes=ALL` takes every node; a node set may also list nodes by name
(`Nodes=`), and a node's name starts with its group's (components/slurm/registration.py node_name).
"""

from __future__ import annotations

from collections.abc import Iterable


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
