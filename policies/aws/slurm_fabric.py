"""A Slurm partition keeps `rdma: required` groups on one fabric.

A partition is where a multi-node job lands. topology.conf keeps a job on one fabric's switch
(components/slurm/topology.py), but only where each node registered into its switch (Slurm 25.05 or later, the
switch present); the partition is the guard that holds without it: one whose RDMA groups sit in different cluster
placement groups lets one job span them, and its nodes then reach each other without EFA at fabric speed. The
partitions are read from the head node's slurm.conf (its user data), each group's fabric from its launch template
(EFA interfaces, the group its bootstrap names) and the placement group the template or its scaling group launches
into. Which groups require RDMA only the stack file says (`rdma: required`, against `auto`): `gpufleet plan` and
`gpufleet policy-config` write them in `rdmaRequiredGroups`; without it every group whose template declares EFA
interfaces is judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..cloud import RDMA_REQUIRED_GROUPS
from ..meta import MANDATORY, Config, Finding, Node, Rule, Stack, config_schema, stack_rule
from ..props import get
from ..slurm_partitions import fabric_spans
from .fabric import efa_interfaces
from .resource_types import ASG, FLEET, INSTANCE, LAUNCH_TEMPLATE, PLACEMENT_GROUP
from .slurm_head import files_of, group_templates, head_nodes


def _placements(template: Node, stack: Stack) -> list[str]:
    """Where the template's nodes launch: the placement group resources it or its scaling groups name (else the
    names they give); empty where none."""
    sources = [template, *stack.dependents_of(template, ASG, FLEET)]
    found = [f"placement group {group.name}" for source in sources
             for group in stack.dependencies_of(source, PLACEMENT_GROUP)]
    if not found:
        names = [get(template.props, "placement", "groupName")] + [get(s.props, "placementGroup") for s in sources[1:]]
        found = [f"placement group {name}" for name in names if isinstance(name, str) and name]
    return sorted(set(found))


def _fabrics(group: str, templates: list[Node], stack: Stack) -> list[str]:
    """The fabrics the group's RDMA nodes join: its placement groups, or its own fabric without one."""
    found: set[str] = set()
    for template in templates:
        if efa_interfaces(template.props):
            found.update(_placements(template, stack) or [f"no placement group (group {group})"])
    return sorted(found)


def check_partitions_one_fabric(stack: Stack, config: Config) -> Iterator[Finding]:
    templates = group_templates(stack)
    required = config.get(RDMA_REQUIRED_GROUPS)
    fabrics = fabric_spans(head_nodes(stack), files_of, templates, lambda g: _fabrics(g, templates[g], stack), required)
    for head, partition, spans in fabrics:
        yield head.urn, (
            f"partition {partition} spans fabrics: it takes RDMA groups {spans}, so a multi-node job may land "
            "on nodes without EFA between them: give each rdma: required group a partition of its own "
            "(scheduler.partitions)")


RULES: list[Rule] = [
    stack_rule(
        "aws-slurm-partition-one-fabric",
        "Every Slurm partition keeps its rdma: required groups on one fabric (one cluster placement group), read "
        "from the head node's slurm.conf.",
        MANDATORY,
        "aws",
        [INSTANCE, LAUNCH_TEMPLATE, ASG, FLEET, PLACEMENT_GROUP],
        check_partitions_one_fabric,
        schema=config_schema({
            RDMA_REQUIRED_GROUPS: {
                "type": "array",
                "items": {"type": "string"},
                "description": "node groups with rdma: required (the stack file's); absent: every group whose "
                               "launch template declares EFA interfaces",
            },
        }),
    ),
]
