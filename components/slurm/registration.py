"""How a node joins Slurm: a dynamic slurmd registration with its features, GRES and switch (the dynamic nodes page
of Slurm 25.11: `slurmd -Z --conf "<node parameters>"`; slurmd.8: NodeName and Port are not taken there, so the name
is slurmd's -N). Topology= puts the node in its fabric's switch of topology.conf (topology.py).

Features name what a job may constrain on (--constraint): the group (the node set its partitions take), the
instance type, the fabric and the zone. The node's name starts with its group's, so the resume and suspend
programs find the group behind a node from its name alone (power.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.catalog.model import InstanceType

from ..bootstrap.for_group import mig_layout
from .gres_conf import gres_counts
from .topology import node_topology

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedGroup


def node_name(group: ResolvedGroup, instance_id: str) -> str:
    """The Slurm node name of the group's instance: the group, then the cloud's id of the instance."""
    return f"{group.name}-{instance_id}"


def node_features(group: ResolvedGroup, instance: InstanceType, zone: str) -> list[str]:
    """The node's features: group, instance type, fabric in use (none without RDMA), zone."""
    fabric = group.fabrics[group.types.index(instance)].kind
    return [group.name, instance.name, fabric, zone]


def slurmd_registration(group: ResolvedGroup, instance: InstanceType, zone: str, instance_id: str) -> list[str]:
    """The slurmd command line a node of `group` registers with (argv; the node's slurm.conf and gres.conf beside)."""
    # With MIG the node's devices per profile (gpu:1g.10gb:56): a node whose boot wrote fewer does not join
    # (scripts/slurm-gres.py fails the join first).
    gres = ",".join(f"gpu:{kind}:{count}" for kind, count in gres_counts(instance, mig_layout(group)).items())
    features = ",".join(node_features(group, instance, zone))
    conf = f"Gres={gres} Feature={features} Topology={node_topology(group, instance)}"
    return ["slurmd", "-Z", "-N", node_name(group, instance_id), "--conf", conf]
