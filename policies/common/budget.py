"""hourly-budget: the on-demand cost of every node group at max size stays within the hourly budget.

Prices come from the catalog through components.catalog.hourly_cost, the function the plan summary
uses, so the rule and `gpufleet plan`'s max_on_demand agree. Group sizes at max: gpufleet writes each
node group's primary type and size.max into the config (`nodeGroups`), because not every scaling
resource carries its maximum (an EC2 Fleet holds only its target capacity, the desired size). A config
without `nodeGroups` (a hand-written one) falls back on the sizes the resources show, through each
cloud's group readers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..cloud import GroupSize, Readers
from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule


def _configured_group(entry: Any) -> GroupSize | None:
    """A `nodeGroups` entry as a group at max size; None when it is malformed."""
    if not isinstance(entry, dict):
        return None
    cloud, instance_type, count = entry.get("cloud"), entry.get("instanceType"), entry.get("maxSize")
    if not isinstance(cloud, str) or not isinstance(instance_type, str):
        return None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    return GroupSize(None, cloud, instance_type, count)


def check_hourly_budget(stack: Stack, config: Config, readers: Readers) -> Iterator[Finding]:
    budget, region = config.get("maxHourlyUsd"), config.get("region")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool):
        raise NotApplicable("no budget configured (maxHourlyUsd)")
    if not isinstance(region, str) or not region:
        raise NotApplicable("no region configured (region), so prices cannot be looked up")
    listed = config.get("nodeGroups") or []
    configured = [_configured_group(entry) for entry in listed]
    bad = [str(index) for index, group in enumerate(configured) if group is None]
    if bad:
        yield (
            None,
            (
                f"hourly-budget config nodeGroups[{', '.join(bad)}] must each give cloud, instanceType and "
                "maxSize (a whole number >= 0): fix the policy config (gpufleet policy-config writes it)"
            ),
        )
        return
    groups = [group for group in configured if group is not None] or readers.group_sizes(stack)
    # The catalog reads data files: imported only when the rule runs.
    from components.catalog import hourly_cost, load_catalog

    catalog = load_catalog()
    total, parts, unpriced = 0.0, [], []
    for group in groups:
        entry = catalog.get(group.cloud, group.instance_type) if group.instance_type else None
        cost = hourly_cost(entry, region, group.count) if entry and group.count is not None else None
        if entry is None or cost is None:
            unpriced.append(group)
            continue
        total += cost
        unit = hourly_cost(entry, region, 1) or 0.0
        parts.append(f"{group.count} x {group.instance_type} at {unit:.2f} = {cost:.2f}")
    if total > budget:
        note = f"; {len(unpriced)} group(s) without a known price not counted" if unpriced else ""
        yield (
            None,
            (
                f"hourly cost at max size is {total:.2f} USD ({'; '.join(parts)}{note}), over the budget of "
                f"{budget:.2f} USD: lower node_groups[].size.max or raise budget.max_hourly_usd"
            ),
        )


def rule(readers: Readers) -> Rule:
    return stack_rule(
        "hourly-budget",
        "On-demand cost of every node group at max size stays within the hourly budget.",
        MANDATORY,
        "any",
        sorted(readers.groups),
        lambda stack, config: check_hourly_budget(stack, config, readers),
        schema=config_schema(
            {
                "maxHourlyUsd": {
                    "type": "number",
                    "minimum": 0,
                    "description": "budget in USD per hour at max size",
                },
                "region": {"type": "string", "description": "region whose catalog prices apply"},
                "nodeGroups": {
                    "type": "array",
                    "items": {"type": "object"},
                    "description": (
                        "each node group at max size: {name, cloud, instanceType (primary), maxSize}; "
                        "empty reads the sizes the scaling resources show"
                    ),
                },
            }
        ),
    )
