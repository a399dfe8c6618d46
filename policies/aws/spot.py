"""AWS scaling-group and spot rules: pinned launch template versions, the spot allocation strategy,
capacity rebalancing, and what acts on a spot interruption warning: the watcher on the node.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..cloud_init import cloud_config
from ..meta import ADVISORY, MANDATORY, Config, Node, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, as_bool, as_int, base64_text, get, items
from .resource_types import ASG, FLEET, LAUNCH_TEMPLATE, LIFECYCLE_HOOK

# gpufleet's on-node watcher (components/bootstrap/scripts/spot-watcher.sh) and the transition it completes.
SPOT_WATCHER = "gpufleet-spot-watcher.service"
TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
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


def _enabled_units(template: Node) -> list[str] | None:
    """The systemd units the template's cloud-config enables at boot; None while its user data is unknown."""
    document = cloud_config(base64_text(get(template.props, "userData")))
    if document is UNKNOWN:
        return None
    runcmd = document.get("runcmd") if isinstance(document, dict) else None
    return [unit for command in (runcmd if isinstance(runcmd, list) else []) if isinstance(command, list)
            and command[:2] == ["systemctl", "enable"] for unit in command[2:] if isinstance(unit, str)]


def _terminate_hook(group: Node, stack: Stack) -> bool | None:
    """Whether a capacity-rebalance replacement waits for the watcher: a terminate lifecycle hook on the Auto Scaling
    group (created with it, or a LifecycleHook resource on it), launch-before-terminate on an EC2 Fleet."""
    if group.type == FLEET:
        strategy = get(group.props, "spotOptions", "maintenanceStrategies", "capacityRebalance", "replacementStrategy")
        return None if strategy is UNKNOWN else strategy == "launch-before-terminate"
    hooks = items(group.props, "initialLifecycleHooks")
    transitions = [get(hook, "lifecycleTransition") for hook in (hooks if isinstance(hooks, list) else [])]
    transitions += [get(hook.props, "lifecycleTransition") for hook in stack.dependents_of(group, LIFECYCLE_HOOK)]
    if hooks is UNKNOWN or UNKNOWN in transitions:
        return None
    return TERMINATING in transitions


def check_spot_handler(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    """What acts on a spot warning is on the node (an EventBridge rule only forwards it): the watcher polls the
    instance metadata, runs the checkpoint hook, and completes the terminate hook."""
    for group in stack.of_type(ASG, FLEET):
        if not _is_spot_group(group, stack):
            continue
        templates = _templates_of(group, stack)
        units = [_enabled_units(template) for template in templates]
        if templates and all(found is not None and SPOT_WATCHER not in found for found in units):
            yield group.urn, (
                f"spot capacity whose nodes run no interruption watcher ({SPOT_WATCHER} is not enabled in the "
                "launch template's user data): nothing saves work on the 2-minute notice; boot gpufleet's bootstrap "
                "(bootstrap.checkpoint_hook is what it runs)"
            )
        if _terminate_hook(group, stack) is False:
            yield group.urn, (
                "spot capacity without a terminate step that waits for the node: add an "
                f"{TERMINATING} lifecycle hook (Auto Scaling) or replacement_strategy launch-before-terminate "
                "(EC2 Fleet), so a rebalanced node checkpoints before it goes"
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
        "Spot nodes run the interruption watcher, and a rebalanced node is terminated only after it (terminate "
        "hook or launch-before-terminate).",
        MANDATORY,
        "aws",
        [ASG, FLEET, LAUNCH_TEMPLATE, LIFECYCLE_HOOK],
        check_spot_handler,
    ),
]
