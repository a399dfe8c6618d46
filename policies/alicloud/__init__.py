"""Alibaba Cloud's part of the pack: no rules yet, and the readers the common rules need (instance types).

A scaling group's size at max comes with the Alibaba rules.
"""

from ..cloud import CloudPolicies, Readers, single_string, strings
from ..meta import Node
from ..props import items

SCALING_CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
INSTANCE = "alicloud:ecs/instance:Instance"


def _scaling_configuration_types(node: Node) -> list[str]:
    return single_string(node, "instanceType") + strings(items(node.props, "instanceTypes"))


POLICIES = CloudPolicies(
    cloud="alicloud",
    rules=(),
    readers=Readers(
        types={
            SCALING_CONFIGURATION: _scaling_configuration_types,
            INSTANCE: lambda node: single_string(node, "instanceType"),
        }
    ),
)
