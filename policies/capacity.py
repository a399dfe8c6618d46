"""What each compute resource runs: its instance types and, for scaling groups, its size at max.

One reader per resource type token, so a cloud adds its types by adding entries to TYPE_READERS and
GROUP_READERS (azure VMSS reads `sku.name` already; its capacity reader comes with the Azure rules).
Readers return only values they can see: unknown values are left out, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .meta import Node, Stack
from .props import as_int, get, items

AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_ASG = "aws:autoscaling/group:Group"
AWS_FLEET = "aws:ec2/fleet:Fleet"
AWS_INSTANCE = "aws:ec2/instance:Instance"
AZURE_VMSS = "azure-native:compute:VirtualMachineScaleSet"
ALI_SCALING_CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"


def cloud_of(resource_type: str) -> str | None:
    prefix = resource_type.split(":", 1)[0]
    return {"aws": "aws", "azure-native": "azure", "alicloud": "alicloud"}.get(prefix)


def _strings(values: object) -> list[str]:
    return [value for value in values if isinstance(value, str) and value] if isinstance(values, list) else []


def _single(node: Node, *path: str) -> list[str]:
    value = get(node.props, *path)
    return [value] if isinstance(value, str) and value else []


def _asg_types(node: Node) -> list[str]:
    overrides = items(node.props, "mixedInstancesPolicy", "launchTemplate", "overrides")
    return _strings([get(o, "instanceType") for o in overrides]) if isinstance(overrides, list) else []


def _fleet_types(node: Node) -> list[str]:
    found: list[str] = []
    configs = items(node.props, "launchTemplateConfigs")
    for config in configs if isinstance(configs, list) else []:
        overrides = items(config, "overrides")
        found += _strings([get(o, "instanceType") for o in overrides]) if isinstance(overrides, list) else []
    return found


def _alicloud_scaling_types(node: Node) -> list[str]:
    listed = items(node.props, "instanceTypes")
    return _single(node, "instanceType") + (_strings(listed) if isinstance(listed, list) else [])


TYPE_READERS: dict[str, Callable[[Node], list[str]]] = {
    AWS_LAUNCH_TEMPLATE: lambda node: _single(node, "instanceType"),
    AWS_INSTANCE: lambda node: _single(node, "instanceType"),
    AWS_ASG: _asg_types,
    AWS_FLEET: _fleet_types,
    AZURE_VMSS: lambda node: _single(node, "sku", "name"),
    ALI_SCALING_CONFIGURATION: _alicloud_scaling_types,
    ALI_INSTANCE: lambda node: _single(node, "instanceType"),
}


def instance_types(node: Node) -> list[str]:
    """The known instance types (or VM sizes) a resource asks for, in declaration order."""
    reader = TYPE_READERS.get(node.type)
    return reader(node) if reader else []


@dataclass(frozen=True)
class GroupSize:
    """A scaling group at its maximum: `count` instances of `instance_type` (its primary type)."""

    urn: str
    cloud: str
    instance_type: str | None
    count: int | None


def _launch_template_type(node: Node, stack: Stack) -> str | None:
    for template in stack.dependencies_of(node, AWS_LAUNCH_TEMPLATE):
        found = _single(template, "instanceType")
        if found:
            return found[0]
    return None


def _asg_size(node: Node, stack: Stack) -> GroupSize:
    types = _asg_types(node)
    primary = types[0] if types else _launch_template_type(node, stack)
    return GroupSize(node.urn, "aws", primary, as_int(get(node.props, "maxSize")))


def _fleet_size(node: Node, stack: Stack) -> GroupSize:
    types = _fleet_types(node)
    primary = types[0] if types else _launch_template_type(node, stack)
    total = as_int(get(node.props, "targetCapacitySpecification", "totalTargetCapacity"))
    return GroupSize(node.urn, "aws", primary, total)


GROUP_READERS: dict[str, Callable[[Node, Stack], GroupSize]] = {
    AWS_ASG: _asg_size,
    AWS_FLEET: _fleet_size,
}


def group_sizes(stack: Stack) -> list[GroupSize]:
    return [GROUP_READERS[node.type](node, stack) for node in stack.nodes if node.type in GROUP_READERS]
