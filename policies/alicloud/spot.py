"""Alibaba Cloud spot rule: a stack that buys preemptible instances has an interruption path, a CloudMonitor
event rule for ECS `Instance:PreemptibleInstanceInterruption` that delivers somewhere.

Spot capacity: a scaling configuration or launch template with spot_strategy SpotAsPriceGo or
SpotWithPriceLimit, or an auto provisioning group with spot target capacity.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..meta import MANDATORY, Node, Rule, Stack, stack_rule
from ..props import UNKNOWN, as_int, get, items
from .resource_types import AUTO_PROVISIONING_GROUP, EVENT_RULE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION, SPOT_STRATEGIES

INTERRUPTION_EVENT = "Instance:PreemptibleInstanceInterruption"
# cms.EventRule's delivery settings: an event rule without any of them notifies no one.
TARGETS = (
    "mnsParameters", "fcParameters", "slsParameters", "webhookParameters", "openApiParameters", "contactParameters",
)


def _is_spot(node: Node) -> bool:
    if node.type == AUTO_PROVISIONING_GROUP:
        default = get(node.props, "defaultTargetCapacityType")
        return default == "Spot" or (as_int(get(node.props, "spotTargetCapacity")) or 0) > 0
    return get(node.props, "spotStrategy") in SPOT_STRATEGIES


def _catches_interruptions(rule: Node) -> bool | None:
    """True/False whether the rule catches and delivers the interruption event; None when it cannot be seen."""
    pattern = get(rule.props, "eventPattern")
    if pattern is UNKNOWN:
        return None
    names = items(pattern, "nameLists")
    if names is UNKNOWN:
        return None
    product = get(pattern, "product")
    if not isinstance(product, str) or product.lower() != "ecs" or not isinstance(names, list):
        return False
    if INTERRUPTION_EVENT not in names:
        return False
    return any(get(rule.props, key) not in (None, []) for key in TARGETS)


def check_spot_interruption_path(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    spot = [node for node in stack.of_type(SCALING_CONFIGURATION, LAUNCH_TEMPLATE, AUTO_PROVISIONING_GROUP)
            if _is_spot(node)]
    if not spot or any(_catches_interruptions(rule) is not False for rule in stack.of_type(EVENT_RULE)):
        return
    for node in spot:
        yield node.urn, (
            f"spot capacity but no CloudMonitor event rule for '{INTERRUPTION_EVENT}': add a cms.EventRule "
            f"with event_pattern product 'ECS', name_lists ['{INTERRUPTION_EVENT}'] and a target (e.g. "
            "mns_parameters) so the 5-minute notice reaches whoever drains the node"
        )


RULES: list[Rule] = [
    stack_rule(
        "alicloud-spot-interruption-handler",
        "Stacks with spot capacity have a CloudMonitor event rule, with a target, for preemptible instance "
        "interruptions.",
        MANDATORY,
        "alicloud",
        [SCALING_CONFIGURATION, LAUNCH_TEMPLATE, AUTO_PROVISIONING_GROUP, EVENT_RULE],
        check_spot_interruption_path,
    ),
]
