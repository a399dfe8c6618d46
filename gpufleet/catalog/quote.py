"""`gpufleet quote`: every catalog type that can hold N GPUs of one model, per region, by hourly cost.

Costs come from the one price arithmetic (pricing.hourly_cost), as the plan's do: `on_demand_usd` is every
node on demand; `expected_usd` is what the plan calls expected: with `--capacity spot` every node at the
published spot price, or at the on-demand price where none is published (what a spot request capped at
on-demand may pay); with on-demand capacity it equals `on_demand_usd`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..clouds.lookup import backend
from ..clouds.registry import CLOUDS
from ..stackfile.errors import SpecError, SpecInvalid
from . import Catalog, InstanceType, hourly_cost

Capacity = Literal["on-demand", "spot"]
EXPECTED_RULE = {
    "on-demand": "expected = on-demand: every node on demand",
    "spot": "expected = every node at the published spot price; at the on-demand price where none is published",
}


@dataclass(frozen=True)
class QuoteRow:
    """One catalog type in one region, sized to hold the asked GPUs."""

    cloud: str
    instance_type: str
    region: str
    gpu_model: str
    gpus_per_node: int
    nodes: int
    gpus: int
    fabric: str
    fabric_gbps: float | None
    on_demand_usd: float | None
    expected_usd: float | None
    price_source: str | None
    price_date: str | None
    one_fabric_group: bool | None
    """False where the nodes exceed the cloud's cap on one RDMA group; None where the cloud has no such cap."""
    notes: tuple[str, ...] = ()
    zone_id: str | None = None
    """The AZ ID the expected price is of, where the cloud prices spot per zone (AWS); None: a regional price."""

    @property
    def priced(self) -> bool:
        return self.expected_usd is not None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "notes": list(self.notes), "priced": self.priced}


@dataclass
class Quote:
    gpu: str
    count: int
    capacity: Capacity
    rows: list[QuoteRow]
    not_offered: list[str] = field(default_factory=list)
    """`type in region (source)` for each pair the catalog lists as not offered: no row for them."""

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu, "count": self.count, "capacity": self.capacity, "expected": EXPECTED_RULE[self.capacity],
            "rows": [row.to_json() for row in self.rows], "not_offered": self.not_offered,
        }


def gpu_models(catalog: Catalog) -> list[str]:
    return sorted({inst.gpu.model for inst in catalog.instances()})


def quote(
    catalog: Catalog,
    lock_regions: dict[str, list[str]],
    gpu: str,
    count: int,
    capacity: Capacity = "on-demand",
    region: str | None = None,
    cloud: str | None = None,
) -> Quote:
    """Rows for every type of the GPU model across the clouds (or `cloud`), in each region the image lock
    covers (or `region`), cheapest first; unpriced rows last. SpecInvalid names the option that is wrong."""
    problems = []
    instances = catalog.instances(cloud, gpu)
    if count < 1:
        problems.append(SpecError("--count", f"must be at least 1, got {count}"))
    if cloud is not None and cloud not in CLOUDS:
        problems.append(SpecError("--cloud", f"must be one of {', '.join(CLOUDS)}, got {cloud!r}"))
    elif not catalog.instances(None, gpu):
        known = ", ".join(gpu_models(catalog))
        problems.append(SpecError("--gpu", f"no catalog type has GPU model {gpu!r}; known: {known}"))
    elif not instances:
        problems.append(SpecError("--gpu", f"{cloud} has no catalog type with GPU model {gpu!r}"))
    known_regions = sorted({r for c in CLOUDS for r in lock_regions.get(c, [])}
                           | {r for inst in catalog.instances() for r in inst.prices})
    if region is not None and region not in known_regions:
        problems.append(SpecError("--region", f"{region!r} is in neither the image lock nor the catalog's prices; "
                                              f"known: {', '.join(known_regions)}"))
    if problems:
        raise SpecInvalid(problems, source="quote")
    rows: list[QuoteRow] = []
    not_offered: list[str] = []
    for inst in instances:
        for where in _regions(catalog, inst.cloud, lock_regions, region):
            price = inst.price(where)
            if price is not None and not price.offered:
                not_offered.append(f"{inst.name} in {where} ({price.source})")
                continue
            rows.append(_row(catalog, inst, where, count, capacity))
    rows.sort(key=lambda r: (not r.priced, r.expected_usd or 0.0, r.cloud, r.instance_type, r.region))
    model = instances[0].gpu.model  # the catalog's spelling of the model asked for in any case
    return Quote(gpu=model, count=count, capacity=capacity, rows=rows, not_offered=not_offered)


def _regions(catalog: Catalog, cloud: str, lock_regions: dict[str, list[str]], region: str | None) -> list[str]:
    """The lock's regions of the cloud; or the asked region where it is the cloud's (in the lock or priced)."""
    if region is None:
        return sorted(lock_regions.get(cloud, []))
    own = set(lock_regions.get(cloud, [])) | {r for inst in catalog.instances(cloud) for r in inst.prices}
    return [region] if region in own else []


def _row(catalog: Catalog, inst: InstanceType, region: str, count: int, capacity: Capacity) -> QuoteRow:
    nodes = math.ceil(count / inst.gpu.count)
    price = inst.price(region)
    on_demand = hourly_cost(inst, region, nodes)
    expected = hourly_cost(inst, region, nodes, spot_count=nodes if capacity == "spot" else 0)
    notes: list[str] = []
    if nodes * inst.gpu.count > count:
        notes.append(f"{nodes * inst.gpu.count} GPUs: {nodes * inst.gpu.count - count} more than asked")
    if on_demand is None:
        why = price.source.partition("; ")[2] if price is not None else ""
        notes.append(f"unpriced: {why or f'the catalog has no {inst.cloud} price for {region}'}")
    elif capacity == "spot" and price is not None and price.spot is None:
        notes.append("no spot price published: expected at the on-demand price")
    # AWS spot is priced per zone: the row is for the zone the figure is of, by its ID (names differ per account).
    zone_id = price.spot_zone_id if capacity == "spot" and price is not None and price.spot is not None else None
    group = backend(inst.cloud).fabric_group(inst)
    one_group: bool | None = None
    if group is not None:
        most = int(catalog.limit(inst.cloud, group.limit))
        one_group = nodes <= most
        if not one_group:
            notes.append(f"cannot be one {group.kind}: {nodes} nodes, at most {most}")
        if capacity == "spot" and not group.takes_spot:
            one_group = False
            notes.append(f"a {group.kind} cannot hold spot nodes")
    return QuoteRow(
        cloud=inst.cloud, instance_type=inst.name, region=region, gpu_model=inst.gpu.model,
        gpus_per_node=inst.gpu.count, nodes=nodes, gpus=nodes * inst.gpu.count,
        fabric=inst.fabric.kind, fabric_gbps=inst.fabric.gbps,
        on_demand_usd=_rounded(on_demand), expected_usd=_rounded(expected),
        price_source=price.source if price is not None else None, price_date=price.date if price is not None else None,
        one_fabric_group=one_group, notes=tuple(notes), zone_id=zone_id,
    )


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
