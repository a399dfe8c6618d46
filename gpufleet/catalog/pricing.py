"""Hourly cost of a node group from the catalog's price snapshots or the stack's own prices: the one place
that multiplies prices.

The plan summary and the policy pack's hourly-budget rule both price groups here, so a plan and the
pack never disagree on what a stack costs at max size. A stack may price a type itself (`prices:` in
`gpufleet:cluster`, a negotiated rate or a type without a published price); that price wins over the
catalog snapshot for the type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar


class HourlyPrice(Protocol):
    """What pricing reads of a price: the catalog's Price and the stack's StackPrice both have it."""

    @property
    def on_demand(self) -> float | None: ...

    @property
    def spot(self) -> float | None: ...


class PricedRow(Protocol):
    """A catalog row with price snapshots per region: a GPU instance type or a Kubernetes system type."""

    def price(self, region: str) -> HourlyPrice | None: ...


RowT = TypeVar("RowT", bound=PricedRow)


def unit_price(instance: PricedRow | None, region: str, stack_price: HourlyPrice | None) -> HourlyPrice | None:
    """The stack's price for the type when it gives one, else the catalog's snapshot in `region`, else None."""
    if stack_price is not None:
        return stack_price
    return instance.price(region) if instance is not None else None


def hourly_cost(
    instance: PricedRow | None,
    region: str,
    count: int,
    spot_count: int = 0,
    stack_price: HourlyPrice | None = None,
) -> float | None:
    """USD per hour of `count` nodes in `region`, `spot_count` of them on spot.

    Spot nodes cost the spot price where one is given, else the on-demand price (what a spot request
    capped at on-demand may pay). None when neither the stack nor the catalog has an on-demand price
    there: unknown, not 0.
    """
    price = unit_price(instance, region, stack_price)
    if price is None or price.on_demand is None:
        return None
    spot_price = price.spot if price.spot is not None else price.on_demand
    return (count - spot_count) * price.on_demand + spot_count * spot_price


def most_expensive(
    candidates: Sequence[tuple[str, RowT | None]], region: str, stack_prices: Mapping[str, HourlyPrice]
) -> tuple[str, RowT | None, HourlyPrice | None] | None:
    """The type of a group that costs most per on-demand node in `region`: what the group costs at worst, since a
    fallback type provisions whenever the primary has no capacity. The stack's price for a type wins over the
    catalog's (unit_price). None when any type has no on-demand price: the worst case is then unknown, not the
    cheapest priced type."""
    worst: tuple[float, str, RowT | None, HourlyPrice | None] | None = None
    for name, instance in candidates:
        stack_price = stack_prices.get(name)
        price = unit_price(instance, region, stack_price)
        if price is None or price.on_demand is None:
            return None
        if worst is None or price.on_demand > worst[0]:
            worst = (price.on_demand, name, instance, stack_price)
    return None if worst is None else worst[1:]
