"""AWS scaling-group and spot rules: pinned launch template versions, the spot allocation strategy,
capacity rebalancing, and a handler for spot interruption warnings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..meta import ADVISORY, MANDATORY, Config, Node, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, JsonError, as_bool, as_int, get, items, parse_json
from .resource_types import ASG, EVENT_RULE, FLEET, LAUNCH_TEMPLATE

SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
FLOATING_VERSIONS = ("$Latest", "$Default")


def _asg_versions(props: dict[str, Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    template = get(props, "launchTemplate")
    if isinstance(template, dict):
        found.append(("launch_template.version", get(template, "version")))
    spec = get(props, "mixedInstancesPolicy", "launchTemplate", "launchTemplateSpecification")
    if isinstance(spec, dict):
        found.append(
            (
                "mixed_instances_policy.launch_template.launch_template_specification.version",
                get(spec, "version"),
            )
        )
    overrides = items(props, "mixedInstancesPolicy", "launchTemplate", "overrides")
    for index, override in enumerate(overrides if isinstance(overrides, list) else []):
        spec = get(override, "launchTemplateSpecification")
        if isinstance(spec, dict):
            found.append((f"overrides[{index}].launch_template_specification.version", get(spec, "version")))
    return found


def check_template_version(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == FLEET:
        configs = items(props, "launchTemplateConfigs")
        versions = [
            (
                f"launch_template_configs[{index}].launch_template_specification.version",
                get(config_, "launchTemplateSpecification", "version"),
            )
            for index, config_ in enumerate(configs if isinstance(configs, list) else [])
        ]
    else:
        versions = _asg_versions(props)
    for where, version in versions:
        if version is UNKNOWN:
            continue
        if version is None or version in FLOATING_VERSIONS:
            shown = "not set ($Default)" if version is None else version
            yield (
                f"{where} is {shown}: instance refresh does not see template changes; set it to the launch "
                "template's latest_version"
            )


def _on_demand_percentage(props: dict[str, Any]) -> int | None:
    distribution = get(props, "mixedInstancesPolicy", "instancesDistribution")
    if get(props, "mixedInstancesPolicy") is None:
        return 100
    if distribution is UNKNOWN:
        return None
    value = get(distribution, "onDemandPercentageAboveBaseCapacity")
    if value is UNKNOWN:
        return None
    return 100 if value is None else as_int(value)  # AWS default: 100 (all on-demand)


def check_spot_allocation(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    percentage = _on_demand_percentage(props)
    if percentage is None or percentage >= 100:
        return
    strategy = get(props, "mixedInstancesPolicy", "instancesDistribution", "spotAllocationStrategy")
    if strategy is UNKNOWN or strategy == "price-capacity-optimized":
        return
    shown = "not set (lowest-price)" if strategy is None else repr(strategy)
    yield (
        f"spot_allocation_strategy is {shown}: set instances_distribution.spot_allocation_strategy = "
        "'price-capacity-optimized' (AWS's recommendation; lowest-price risks high interruption rates)"
    )


def _templates_of(node: Node, stack: Stack) -> list[Node]:
    return stack.dependencies_of(node, LAUNCH_TEMPLATE)


def _is_spot_group(node: Node, stack: Stack) -> bool:
    if node.type == FLEET:
        spec = get(node.props, "targetCapacitySpecification")
        return (
            get(spec, "defaultTargetCapacityType") == "spot"
            or (as_int(get(spec, "spotTargetCapacity")) or 0) > 0
        )
    percentage = _on_demand_percentage(node.props)
    if percentage is not None and percentage < 100:
        return True
    return any(
        get(t.props, "instanceMarketOptions", "marketType") == "spot" for t in _templates_of(node, stack)
    )


def check_capacity_rebalance(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for group in stack.of_type(ASG):
        rebalance = get(group.props, "capacityRebalance")
        if _is_spot_group(group, stack) and rebalance is not UNKNOWN and as_bool(rebalance) is not True:
            yield (
                group.urn,
                (
                    "spot group without capacity rebalancing: set capacity_rebalance = True so the group "
                    "replaces instances on rebalance recommendations, before the 2-minute notice"
                ),
            )


def _event_pattern_matches(rule: Node) -> bool | None:
    """True/False whether the rule catches spot interruption warnings; None when it cannot be seen."""
    try:
        pattern = parse_json(get(rule.props, "eventPattern"))
    except JsonError:
        return False
    if pattern is UNKNOWN:
        return None
    detail = get(pattern, "detail-type") if isinstance(pattern, dict) else None
    listed = detail if isinstance(detail, list) else [detail]
    return SPOT_WARNING in listed


def check_spot_handler(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    spot = [node for node in stack.of_type(ASG, FLEET) if _is_spot_group(node, stack)]
    if not spot:
        return
    verdicts = [_event_pattern_matches(rule) for rule in stack.of_type(EVENT_RULE)]
    if any(verdict is not False for verdict in verdicts):
        return
    for group in spot:
        yield (
            group.urn,
            (
                f"spot capacity but no EventBridge rule for '{SPOT_WARNING}': add a cloudwatch.EventRule "
                "with event_pattern detail-type ['EC2 Spot Instance Interruption Warning'] and a target "
                "that drains the node"
            ),
        )


RULES: list[Rule] = [
    resource_rule(
        "aws-launch-template-version-pinned",
        "Auto Scaling groups and fleets reference an explicit launch template version, not $Latest/$Default.",
        ADVISORY,
        "aws",
        [ASG, FLEET],
        check_template_version,
    ),
    resource_rule(
        "aws-spot-allocation-strategy",
        "Spot Auto Scaling groups use the price-capacity-optimized allocation strategy.",
        ADVISORY,
        "aws",
        [ASG],
        check_spot_allocation,
    ),
    stack_rule(
        "aws-spot-capacity-rebalance",
        "Spot Auto Scaling groups enable capacity rebalancing.",
        MANDATORY,
        "aws",
        [ASG, LAUNCH_TEMPLATE],
        check_capacity_rebalance,
    ),
    stack_rule(
        "aws-spot-interruption-handler",
        "Stacks with spot capacity have an EventBridge rule for EC2 Spot Instance Interruption Warnings.",
        MANDATORY,
        "aws",
        [ASG, FLEET, LAUNCH_TEMPLATE, EVENT_RULE],
        check_spot_handler,
    ),
]
