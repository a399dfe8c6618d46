"""hourly-budget: the on-demand cost of every node group at max size stays within the hourly budget.

Prices come through components.catalog.hourly_cost, the function the plan summary uses, so the rule and
`gpufleet plan`'s max_on_demand agree: the stack's own price for a type (`prices` in `gpufleet:cluster`,
carried in the config as a group's `price`) wins over the catalog snapshot. A group that cannot be priced
fails the rule: a budget that leaves a group out is not checked. Group sizes at max: gpufleet writes each
node group's primary type and size.max into the config (`nodeGroups`), because not every scaling
resource carries its maximum (an EC2 Fleet holds only its target capacity, the desired size). A config
without `nodeGroups` (a hand-written one) falls back on the sizes the resources show, through each
cloud's group readers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..cloud import GroupSize, Readers
from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule

HOW_TO_PRICE = (
    "give the stack's own price under gpufleet:cluster prices: "
    '{{{type}: {{on_demand: USD_PER_HOUR, spot: USD_PER_HOUR_OR_NULL, source: "where the rate comes from"}}}}'
)


@dataclass(frozen=True)
class StackPrice:
    """A group's `price` in the config: the stack's own price for its primary type."""

    on_demand: float
    spot: float | None
    source: str


@dataclass(frozen=True)
class PricedGroup:
    size: GroupSize
    name: str | None
    stack_price: StackPrice | None = None

    @property
    def label(self) -> str:
        return f"node group {self.name}" if self.name else (self.size.urn or "a scaling group").split("::")[-1]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _stack_price(value: Any) -> StackPrice | None | bool:
    """The entry's `price` as a StackPrice; None when absent; False when malformed."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return False
    on_demand, spot, source = value.get("onDemand"), value.get("spot"), value.get("source")
    if not _number(on_demand) or not (spot is None or _number(spot)) or not isinstance(source, str) or not source:
        return False
    return StackPrice(float(on_demand), None if spot is None else float(spot), source)


def _configured_group(entry: Any) -> PricedGroup | None:
    """A `nodeGroups` entry as a group at max size; None when it is malformed."""
    if not isinstance(entry, dict):
        return None
    cloud, instance_type, count = entry.get("cloud"), entry.get("instanceType"), entry.get("maxSize")
    if not isinstance(cloud, str) or not isinstance(instance_type, str):
        return None
    # Under the Pulumi CLI the config arrives as a protobuf Struct, whose numbers are doubles: 16 reads 16.0.
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    price = _stack_price(entry.get("price"))
    if price is False:
        return None
    name = entry.get("name")
    return PricedGroup(GroupSize(None, cloud, instance_type, count), name if isinstance(name, str) else None,
                       price or None)


def _unpriced(group: PricedGroup, region: str, budget: float) -> Finding:
    size = group.size
    if size.instance_type is None or size.count is None:
        what = "instance type" if size.instance_type is None else "size at max"
        return size.urn, (
            f"{group.label}: its {what} is unknown, so the budget of {budget:.2f} USD cannot be checked: "
            "list the group in the hourly-budget config nodeGroups (gpufleet policy-config writes it)"
        )
    return size.urn, (
        f"no price for {size.instance_type} in {region} ({group.label}), so the budget of {budget:.2f} USD "
        f"cannot be checked: {HOW_TO_PRICE.format(type=size.instance_type)}"
    )


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
                "maxSize (a whole number >= 0), and a price, where given, onDemand and source (spot optional): "
                "fix the policy config (gpufleet policy-config writes it)"
            ),
        )
        return
    groups = [group for group in configured if group is not None] or [
        PricedGroup(size, None) for size in readers.group_sizes(stack)
    ]
    # The catalog reads data files: imported only when the rule runs.
    from components.catalog import hourly_cost, load_catalog

    catalog = load_catalog()
    total, parts, unpriced = 0.0, [], []
    for group in groups:
        size = group.size
        entry = catalog.get(size.cloud, size.instance_type) if size.instance_type else None
        known = size.instance_type is not None and size.count is not None
        cost = hourly_cost(entry, region, size.count, 0, group.stack_price) if known else None  # type: ignore[arg-type]
        if cost is None:
            unpriced.append(group)
            continue
        total += cost
        unit = hourly_cost(entry, region, 1, 0, group.stack_price) or 0.0
        label = f" (stack price: {group.stack_price.source})" if group.stack_price else ""
        parts.append(f"{size.count} x {size.instance_type} at {unit:.2f}{label} = {cost:.2f}")
    for group in unpriced:
        yield _unpriced(group, region, budget)
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
        "On-demand cost of every node group at max size stays within the hourly budget; a group without "
        "a price fails it.",
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
                        "each node group at max size: {name, cloud, instanceType (primary), maxSize, price}; "
                        "price {onDemand, spot, source} is the stack's own and wins over the catalog's; "
                        "empty reads the sizes the scaling resources show"
                    ),
                },
            }
        ),
    )
