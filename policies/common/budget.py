"""hourly-budget: the on-demand cost of every node group at max size stays within the hourly budget.

Prices come through gpufleet.catalog.hourly_cost, the function the plan summary uses, so the rule and
`gpufleet plan`'s max_on_demand agree: the stack's own price for a type (`prices` in `gpufleet:cluster`,
carried in the config as a group's `prices`) wins over the catalog snapshot. A group that cannot be priced
fails the rule: a budget that leaves a group out is not checked. The worst case: gpufleet writes each node
group's types and size.max into the config (`nodeGroups`) and the group is priced at its most expensive type
(catalog.most_expensive, the plan's max_on_demand too), since a fallback type may provision the whole group. A
stack price is shown beside the catalog's; the organisation may require a budget and refuse stack prices below
the catalog's (budgetRequired, pricesAtLeastCatalog in policies/organisation.yaml). Sizes at max come from
the config because not every scaling resource carries its maximum (an EC2 Fleet holds only its target
capacity, the desired size). A config without `nodeGroups` (a hand-written one) falls back on the sizes
the resources show, through each cloud's group readers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..cloud import GroupSize, Readers
from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule

HOW_TO_PRICE = (
    "give the stack's own price under gpufleet:cluster prices: "
    '{{{type}: {{on_demand: USD_PER_HOUR, spot: USD_PER_HOUR_OR_NULL, source: "where the rate comes from"}}}}'
)


@dataclass(frozen=True)
class StackPrice:
    """A `prices` entry of a group in the config: the stack's own price for one of its types."""

    on_demand: float
    spot: float | None
    source: str


@dataclass(frozen=True)
class PricedGroup:
    size: GroupSize
    name: str | None
    fallbacks: tuple[str, ...] = ()
    """The group's other types; any of them may provision it, so it is priced at the most expensive."""
    stack_prices: dict[str, StackPrice] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"node group {self.name}" if self.name else (self.size.urn or "a scaling group").split("::")[-1]

    @property
    def types(self) -> list[str]:
        return [t for t in (self.size.instance_type, *self.fallbacks) if t is not None]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def _stack_price(value: Any) -> StackPrice | None:
    """A `prices` entry as a StackPrice; None when malformed."""
    if not isinstance(value, dict):
        return None
    on_demand, spot, source = value.get("onDemand"), value.get("spot"), value.get("source")
    if not _number(on_demand) or not (spot is None or _number(spot)) or not isinstance(source, str) or not source:
        return None
    return StackPrice(float(on_demand), None if spot is None else float(spot), source)


def _configured_group(entry: Any) -> PricedGroup | None:
    """A `nodeGroups` entry as a group at max size; None when it is malformed."""
    if not isinstance(entry, dict):
        return None
    cloud, types, count = entry.get("cloud"), entry.get("instanceTypes"), entry.get("maxSize")
    if not isinstance(cloud, str) or not isinstance(types, list) or not types:
        return None
    if not all(isinstance(t, str) and t for t in types):
        return None
    # Under the Pulumi CLI the config arrives as a protobuf Struct, whose numbers are doubles: 16 reads 16.0.
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    given = entry.get("prices") or {}
    prices = {t: _stack_price(p) for t, p in given.items()} if isinstance(given, dict) else None
    if prices is None or any(p is None for p in prices.values()):
        return None
    name = entry.get("name")
    return PricedGroup(GroupSize(None, cloud, types[0], count), name if isinstance(name, str) else None,
                       tuple(types[1:]), prices)  # type: ignore[arg-type]


def _unpriced(group: PricedGroup, region: str, budget: float, missing: list[str]) -> Finding:
    size = group.size
    if size.instance_type is None or size.count is None:
        what = "instance type" if size.instance_type is None else "size at max"
        return size.urn, (
            f"{group.label}: its {what} is unknown, so the budget of {budget:.2f} USD cannot be checked: "
            "list the group in the hourly-budget config nodeGroups (gpufleet policy-config writes it)"
        )
    return size.urn, (
        f"no price for {', '.join(missing)} in {region} ({group.label}), so the budget of {budget:.2f} USD "
        f"cannot be checked: {HOW_TO_PRICE.format(type=missing[0])}"
    )


def _below_catalog(group: PricedGroup, catalog: Any, region: str) -> Iterator[Finding]:
    for name, given in sorted(group.stack_prices.items()):
        entry = catalog.priced(group.size.cloud, name)
        listed = entry.price(region) if entry is not None else None
        if listed is not None and listed.on_demand is not None and given.on_demand < listed.on_demand:
            yield group.size.urn, (
                f"{group.label}: the stack prices {name} at {given.on_demand:.2f} USD/h ({given.source}), below the "
                f"catalog's {listed.on_demand:.2f} in {region}; the organisation allows no price below the catalog's "
                "(pricesAtLeastCatalog): remove it from gpufleet:cluster prices"
            )


def check_hourly_budget(stack: Stack, config: Config, readers: Readers) -> Iterator[Finding]:
    budget, region = config.get("maxHourlyUsd"), config.get("region")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool):
        if config.get("budgetRequired"):
            yield None, ("the organisation requires a budget (hourly-budget budgetRequired) and the stack sets none: "
                         "set gpufleet:cluster budget.max_hourly_usd")
            return
        raise NotApplicable("no budget configured (maxHourlyUsd)")
    if not math.isfinite(budget):
        yield None, f"the budget {budget} USD is not a finite number: set budget.max_hourly_usd to a number"
        return
    if not isinstance(region, str) or not region:
        raise NotApplicable("no region configured (region), so prices cannot be looked up")
    listed = config.get("nodeGroups") or []
    configured = [_configured_group(entry) for entry in listed]
    bad = [str(index) for index, group in enumerate(configured) if group is None]
    if bad:
        yield (
            None,
            (
                f"hourly-budget config nodeGroups[{', '.join(bad)}] must each give cloud, instanceTypes (primary "
                "first) and maxSize (a whole number >= 0), and prices, where given, per type onDemand and source "
                "(spot optional): fix the policy config (gpufleet policy-config writes it)"
            ),
        )
        return
    groups = [group for group in configured if group is not None] or [
        PricedGroup(size, None) for size in readers.group_sizes(stack)
    ]
    # The catalog reads data files: imported only when the rule runs.
    from gpufleet.catalog import load_catalog
    from gpufleet.catalog.pricing import hourly_cost, most_expensive, unit_price

    catalog = load_catalog()
    total, parts, unpriced = 0.0, [], []
    for group in groups:
        size = group.size
        if config.get("pricesAtLeastCatalog"):
            yield from _below_catalog(group, catalog, region)
        candidates = [(t, catalog.priced(size.cloud, t)) for t in group.types]
        worst = most_expensive(candidates, region, group.stack_prices) if candidates else None
        if worst is None or size.count is None:
            unpriced.append((group, [t for t, e in candidates
                                     if (p := unit_price(e, region, group.stack_prices.get(t))) is None
                                     or p.on_demand is None] or group.types))
            continue
        name, entry, stack_price = worst
        cost = hourly_cost(entry, region, size.count, 0, stack_price) or 0.0
        total += cost
        unit = hourly_cost(entry, region, 1, 0, stack_price) or 0.0
        listed = entry.price(region) if entry is not None else None
        catalog_note = f"; catalog {listed.on_demand:.2f}" if listed is not None and listed.on_demand else ""
        label = f" (stack price: {stack_price.source}{catalog_note})" if stack_price else ""
        worst_note = f", the most expensive of {', '.join(group.types)}" if group.fallbacks else ""
        parts.append(f"{size.count} x {name}{worst_note} at {unit:.2f}{label} = {cost:.2f}")
    for group, missing in unpriced:
        yield _unpriced(group, region, budget, missing)
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
                        "each node group at max size: {name, cloud, instanceTypes (primary first), maxSize, prices}, "
                        "priced at its most expensive type; prices {TYPE: {onDemand, spot, source}} are the "
                        "stack's own and win over the catalog's; empty reads the sizes the scaling resources show"
                    ),
                },
                "budgetRequired": {
                    "type": "boolean",
                    "default": False,
                    "description": "a stack without a budget fails the rule (an organisation setting)",
                },
                "pricesAtLeastCatalog": {
                    "type": "boolean",
                    "default": False,
                    "description": "a stack price below the catalog's for the type fails the rule",
                },
            }
        ),
    )
