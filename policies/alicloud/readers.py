"""What Alibaba Cloud compute resources run: instance types of scaling configurations, launch templates,
instances, scaling groups and auto provisioning groups, and a scaling group's size at its maximum.

An ESS scaling group carries maxSize; its primary type is its first launch template override, else the
first type of a scaling configuration attached to it (which depends on the group through scalingGroupId),
else its launch template's. An auto provisioning group holds only its total target capacity.
"""

from __future__ import annotations

from ..cloud import GroupSize, Readers, single_string, strings
from ..meta import Node, Stack
from ..props import as_int, get, items
from .resource_types import AUTO_PROVISIONING_GROUP, INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION, SCALING_GROUP


def scaling_configuration_types(node: Node) -> list[str]:
    return single_string(node, "instanceType") + strings(items(node.props, "instanceTypes"))


def _override_types(node: Node, key: str) -> list[str]:
    listed = items(node.props, key)
    return strings([get(entry, "instanceType") for entry in listed]) if isinstance(listed, list) else []


def scaling_group_types(node: Node) -> list[str]:
    return _override_types(node, "launchTemplateOverrides")


def provisioning_group_types(node: Node) -> list[str]:
    return _override_types(node, "launchTemplateConfigs")


def _primary(node: Node, stack: Stack, own: list[str]) -> str | None:
    if own:
        return own[0]
    for configuration in stack.dependents_of(node, SCALING_CONFIGURATION):
        found = scaling_configuration_types(configuration)
        if found:
            return found[0]
    for template in stack.dependencies_of(node, LAUNCH_TEMPLATE):
        found = single_string(template, "instanceType")
        if found:
            return found[0]
    return None


def _scaling_group_size(node: Node, stack: Stack) -> GroupSize:
    primary = _primary(node, stack, scaling_group_types(node))
    return GroupSize(node.urn, "alicloud", primary, as_int(get(node.props, "maxSize")))


def _provisioning_group_size(node: Node, stack: Stack) -> GroupSize:
    primary = _primary(node, stack, provisioning_group_types(node))
    return GroupSize(node.urn, "alicloud", primary, as_int(get(node.props, "totalTargetCapacity")))


READERS = Readers(
    types={
        SCALING_CONFIGURATION: scaling_configuration_types,
        INSTANCE: lambda node: single_string(node, "instanceType"),
        LAUNCH_TEMPLATE: lambda node: single_string(node, "instanceType"),
        SCALING_GROUP: scaling_group_types,
        AUTO_PROVISIONING_GROUP: provisioning_group_types,
    },
    groups={SCALING_GROUP: _scaling_group_size, AUTO_PROVISIONING_GROUP: _provisioning_group_size},
)
