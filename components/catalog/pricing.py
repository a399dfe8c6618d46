"""Hourly cost of a node group from the catalog's price snapshots: the one place that multiplies prices.

The plan summary and the policy pack's hourly-budget rule both price groups here, so a plan and the
pack never disagree on what a stack costs at max size.
"""

from __future__ import annotations

from .model import InstanceType


def hourly_cost(instance: InstanceType, region: str, count: int, spot_count: int = 0) -> float | None:
    """USD per hour of `count` nodes in `region`, `spot_count` of them on spot.

    Spot nodes cost the spot price where the catalog publishes one, else the on-demand price (what a spot
    request capped at on-demand may pay). None when the catalog has no on-demand price there: unknown, not 0.
    """
    price = instance.price(region)
    if price is None or price.on_demand is None:
        return None
    spot_price = price.spot if price.spot is not None else price.on_demand
    return (count - spot_count) * price.on_demand + spot_count * spot_price
