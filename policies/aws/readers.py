"""What AWS compute resources run: instance types of templates, instances, Auto Scaling groups and
EC2 Fleets, and the size of a scaling group at its maximum.

An EC2 Fleet has no maximum: it runs its total target capacity (the node group's desired size), so that
is all this reader can see. gpufleet passes each node group's size at max in the budget rule's config.
"""

from __future__ import annotations

from ..cloud import GroupSize, Readers, single_string, strings
from ..meta import Node, Stack
from ..props import as_int, get, items
from .resource_types import ASG, FLEET, INSTANCE, LAUNCH_TEMPLATE


def asg_types(node: Node) -> list[str]:
    overrides = items(node.props, "mixedInstancesPolicy", "launchTemplate", "overrides")
    return strings([get(o, "instanceType") for o in overrides]) if isinstance(overrides, list) else []


def fleet_types(node: Node) -> list[str]:
    found: list[str] = []
    configs = items(node.props, "launchTemplateConfigs")
    for config in configs if isinstance(configs, list) else []:
        overrides = items(config, "overrides")
        found += strings([get(o, "instanceType") for o in overrides]) if isinstance(overrides, list) else []
    return found


def _launch_template_type(node: Node, stack: Stack) -> str | None:
    for template in stack.dependencies_of(node, LAUNCH_TEMPLATE):
        found = single_string(template, "instanceType")
        if found:
            return found[0]
    return None


def _asg_size(node: Node, stack: Stack) -> GroupSize:
    types = asg_types(node)
    primary = types[0] if types else _launch_template_type(node, stack)
    return GroupSize(node.urn, "aws", primary, as_int(get(node.props, "maxSize")))


def _fleet_size(node: Node, stack: Stack) -> GroupSize:
    types = fleet_types(node)
    primary = types[0] if types else _launch_template_type(node, stack)
    total = as_int(get(node.props, "targetCapacitySpecification", "totalTargetCapacity"))
    return GroupSize(node.urn, "aws", primary, total)


READERS = Readers(
    types={
        LAUNCH_TEMPLATE: lambda node: single_string(node, "instanceType"),
        INSTANCE: lambda node: single_string(node, "instanceType"),
        ASG: asg_types,
        FLEET: fleet_types,
    },
    groups={ASG: _asg_size, FLEET: _fleet_size},
)
