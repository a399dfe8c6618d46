"""topology.conf of a VM cluster: one leaf switch per fabric group, so a multi-node job lands inside one fabric.

Slurm's topology/tree (topology.conf.5, SchedMD/slurm@slurm-25-11-5-1 doc/man/man5/topology.conf.5 lines 37-38):
"Jobs can only span nodes connected by the same switch fabric". The switches here have no parent, so no job spans
two of them:
- `fabric-<group>`: the nodes of a group whose instance type uses RDMA (EFA, InfiniBand, eRDMA). Such a group is one
  fabric group: an AWS cluster placement group (components/clouds/aws/nodegroup.py), an Azure InfiniBand scale set
  (Uniform, singlePlacementGroup: components/clouds/azure/nodegroup.py), an Alibaba group of eRDMA nodes, each in one
  zone (gpufleet/stackfile/checks.py); nodes of two groups do not reach each other at fabric speed.
- `network`: every node without RDMA; they reach each other over the cloud network only, so a job spans groups there
  as it did before.

Nodes are dynamic, so the file names no node: a switch without Nodes= is an empty leaf switch (25.11
src/plugins/topology/tree/switch_record.c line 484; 22.05 refused it), and a node joins its switch when it registers
with `Topology=default:<switch>` in `slurmd -Z --conf` (registration.py): slurmd sends its --conf to slurmctld
(src/slurmd/slurmd/slurmd.c line 932), which adds the node to the switch (src/slurmctld/node_mgr.c
create_dynamic_reg_node, lines 5063-5068, through src/interfaces/topology.c topology_g_add_rm_node, lines 453-513);
topology.conf's topology is named "default" (src/interfaces/topology.c line 298). The leaf switch must exist:
the tree plugin adds no switch without a known parent (src/plugins/topology/tree/topology_tree.c lines 136-141),
and slurmctld then drops the node's Topology= with an error and keeps the node in no switch (node_mgr.c lines
5063-5068), so topology.conf declares every switch a registration names. A deleted node (the suspend program's
`scontrol delete`) leaves its switch (node_mgr.c _delete_node_ptr, lines 5151-5153).
The tests run it under Ubuntu resolute's 25.11.2 (tests/slurm_rootfs.py). With no root switch, slurmctld and slurmd
log "TOPOLOGY: no switch can reach all nodes through its descendants. If this is not intentional, fix the
topology.conf file." (switch_record.c line 625): intended, it is what keeps a job inside one fabric.

Only the head node holds the file; configless nodes fetch it with slurm.conf (src/common/fetch_config.c lines
72-73). A switch name is at most 64 characters (topology.conf.5): "fabric-" and a group name of at most 32 fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.catalog.model import InstanceType

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

# The name Slurm gives the topology of topology.conf (src/interfaces/topology.c line 298).
TOPOLOGY = "default"
# The switch of the nodes without RDMA.
NETWORK_SWITCH = "network"


def node_switch(group: ResolvedGroup, instance: InstanceType) -> str:
    """The leaf switch a node of `instance` in `group` joins: its group's fabric, or the network without RDMA."""
    uses_fabric = group.fabrics[group.types.index(instance)].kind != "none"
    return f"fabric-{group.name}" if uses_fabric else NETWORK_SWITCH


def node_topology(group: ResolvedGroup, instance: InstanceType) -> str:
    """The node's Topology= value (slurm.conf.5: <topology_name>:<topology_unit>)."""
    return f"{TOPOLOGY}:{node_switch(group, instance)}"


def render_topology_conf(cluster: ResolvedCluster) -> str:
    """The cluster's topology.conf: every switch a node of the cluster can join, each empty until nodes register."""
    switches = dict.fromkeys(node_switch(group, instance) for group in cluster.groups
                             for instance in group.known_types)
    return "".join(f"SwitchName={switch}\n" for switch in switches)
