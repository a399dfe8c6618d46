"""Checks of `scheduler` kind slurm against the node groups, the network and the catalog.

A partition is where a job lands: one that names a group the stack lacks has no nodes, and one holding two
`rdma: required` groups lets a multi-node job span two fabric groups (placement groups, InfiniBand scale sets, eRDMA
groups), whose nodes do not reach each other at fabric speed. topology.conf keeps a job on one switch only
where each node registered into it (components/slurm/topology.py), so a group that *requires* RDMA also gets a
partition of its own fabric.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .check_registry import check
from .errors import SpecError

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster


def slurm_on(cluster: ResolvedCluster) -> bool:
    return bool(cluster.spec.scheduler.kind == "slurm")


def head_node_type(cluster: ResolvedCluster) -> str | None:
    """The head node's instance type: the stack's, or the cloud's default CPU type in the catalog (system_types, the
    row the Kubernetes system group defaults to); None where neither is."""
    found = cluster.head_node_type
    return found[0] if found else None


@check
def partitions_name_node_groups(cluster: ResolvedCluster) -> Iterator[SpecError]:
    if not slurm_on(cluster):
        return
    known = {group.name for group in cluster.groups}
    for partition, groups in cluster.spec.scheduler.partitions.items():
        unknown = [name for name in groups if name not in known]
        if unknown:
            yield SpecError(f"scheduler.partitions.{partition}",
                            f"{', '.join(unknown)} not among node_groups ({', '.join(sorted(known))})")


@check
def partitions_keep_rdma_groups_apart(cluster: ResolvedCluster) -> Iterator[SpecError]:
    if not slurm_on(cluster):
        return
    required = {group.name for group in cluster.groups if group.spec.rdma == "required"}
    for partition, groups in cluster.spec.scheduler.partitions.items():
        fabrics = sorted(required.intersection(groups))
        if len(fabrics) > 1:
            yield SpecError(f"scheduler.partitions.{partition}",
                            f"{', '.join(fabrics)} are rdma: required groups, each its own fabric group: a job "
                            "in one partition could span both without RDMA between them; give each its own "
                            "partition")


@check
def head_node_fits(cluster: ResolvedCluster) -> Iterator[SpecError]:
    if not slurm_on(cluster):
        return
    head = cluster.spec.scheduler.head_node
    head_type = head_node_type(cluster)
    if head_type is None:
        yield SpecError("scheduler.head_node.instance_type",
                        f"the catalog has no CPU type of {cluster.spec.cloud} to default to (system_types): set a "
                        "small on-demand CPU type of the cloud (it runs slurmctld only)")
    elif cluster.catalog.get(cluster.spec.cloud, head_type) is not None:
        yield SpecError("scheduler.head_node.instance_type",
                        f"{head_type} is a GPU type: the head node runs slurmctld only, give it a small CPU type")
    zones = cluster.spec.network.zones
    if head and head.zone is not None and head.zone not in zones:
        yield SpecError("scheduler.head_node.zone", f"{head.zone} is not one of network.zones ({', '.join(zones)})")
