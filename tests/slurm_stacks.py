"""Shipped VM stacks turned slurm, for the stack-file, rendering and daemon tests."""

from __future__ import annotations

import copy
from typing import Any

from conftest import read_cluster

# The shipped VM training stacks, one per cloud, with a head node type of the cloud (the catalog has no CPU rows
# to default to yet, so the stack names one; these are the clouds' general-purpose 4 vCPU types).
SLURM_STACKS = {
    "aws-train-p5": "m7i.xlarge",
    "azure-train-ndh100": "Standard_D4ds_v5",
    "alicloud-train-ebmgn8v": "ecs.g7.xlarge",
}


def slurm_cluster(stack: str = "aws-train-p5", **scheduler: Any) -> dict[str, Any]:
    """The shipped stack's cluster with scheduler kind slurm and its head node type, plus `scheduler` overrides."""
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "slurm", "head_node": {"instance_type": SLURM_STACKS[stack]}, **scheduler}
    return cluster


def second_group(cluster: dict[str, Any], name: str, **fields: Any) -> dict[str, Any]:
    """A copy of the cluster's first node group under another name, added to the cluster."""
    group = {**copy.deepcopy(cluster["node_groups"][0]), "name": name, **fields}
    cluster["node_groups"].append(group)
    return group
