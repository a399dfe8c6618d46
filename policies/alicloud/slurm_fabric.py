"""A Slurm partition keeps `rdma: required` groups on one fabric.

A partition is where a multi-node job lands. topology.conf keeps a job on one fabric's switch
(components/slurm/topology.py), but only where each node registered into its switch (Slurm 25.05 or later, the
switch present); the partition is the guard that holds without it: one whose eRDMA groups sit in different zones
lets one job span them, and its nodes then reach each other without eRDMA (ERIs reach across a zone, not beyond it:
gpufleet/clouds/alicloud/backend.py fabric_group; alicloud-erdma-one-zone keeps each group in one). The partitions
are read from the head node's slurm.conf (its user data), each group's zone from the vSwitches of the scaling group
its scaling configuration names. Which groups require RDMA only the stack file says (`rdma: required`, against
`auto`): `gpufleet plan` and `gpufleet policy-config` write them in `rdmaRequiredGroups`; without it every group whose
scaling configuration has ERIs is judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..cloud import RDMA_REQUIRED_GROUPS
from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, config_schema, stack_rule
from ..props import get
from ..slurm_partitions import fabric_spans
from .fabric import is_eri_configuration
from .resource_types import INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION, SCALING_GROUP, VSWITCH
from .slurm_head import files_of, group_launchers, head_nodes


def _fabrics(group: str, launchers: list[Node], stack: Stack) -> list[str]:
    """The fabrics the group's eRDMA nodes join: the zones of its scaling groups' vSwitches, or its own fabric
    where they cannot be read (brought vSwitches)."""
    found: set[str] = set()
    for launcher in launchers:
        if not is_eri_configuration(launcher):
            continue
        zones = {f"zone {zone}" for scaling in stack.dependencies_of(launcher, SCALING_GROUP, prop="scalingGroupId")
                 for switch in stack.dependencies_of(scaling, VSWITCH, prop="vswitchIds")
                 if isinstance(zone := get(switch.props, "zoneId"), str)}
        found.update(zones or {f"no readable zone (group {group})"})
    return sorted(found)


def check_partitions_one_fabric(stack: Stack, config: Config) -> Iterator[Finding]:
    launchers = group_launchers(stack)
    required = config.get(RDMA_REQUIRED_GROUPS)
    fabrics = fabric_spans(head_nodes(stack), files_of, launchers, lambda g: _fabrics(g, launchers[g], stack), required)
    for head, partition, spans in fabrics:
        yield head.urn, (
            f"partition {partition} spans fabrics: it takes eRDMA groups {spans}, so a multi-node job may land on "
            "nodes without eRDMA between them: give each rdma: required group a partition of its own "
            "(scheduler.partitions), or put the groups in one zone")


RULES: list[Rule] = [
    stack_rule(
        "alicloud-slurm-partition-one-fabric",
        "Every Slurm partition keeps its rdma: required groups on one fabric (one zone's eRDMA), read from the head "
        "node's slurm.conf.",
        MANDATORY,
        "alicloud",
        [INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION, SCALING_GROUP, VSWITCH],
        check_partitions_one_fabric,
        schema=config_schema({
            RDMA_REQUIRED_GROUPS: {
                "type": "array",
                "items": {"type": "string"},
                "description": "node groups with rdma: required (the stack file's); absent: every group whose "
                               "scaling configuration has ERIs",
            },
        }),
    ),
]
