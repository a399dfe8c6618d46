"""GPU counts and hourly cost of a cluster spec from the catalog's price snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog, hourly_cost
from ..clouds.aws.efa import interface_layout
from ..spec import ClusterSpec, NodeGroup
from ..spec.rules import Context, uses_rdma


@dataclass
class Summary:
    gpus: dict[str, int]
    hourly_usd: dict[str, float]
    node_groups: list[dict]
    unpriced: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        out: dict = {"gpus": self.gpus, "hourly_usd": self.hourly_usd, "node_groups": self.node_groups}
        if self.unpriced:
            out["unpriced"] = self.unpriced
        return out


def _fabric_in_use(group: NodeGroup, spec: ClusterSpec, ctx: Context) -> tuple[str, int]:
    inst = ctx.catalog.get(spec.cloud, group.instance_types[0])
    if inst is None or not uses_rdma(group, ctx, spec.cloud):
        return "none", 0
    if inst.fabric.kind == "efa":
        return "efa", len(interface_layout(inst, True))
    return inst.fabric.kind, inst.fabric.interfaces


def summarize(spec: ClusterSpec, ctx: Context) -> Summary:
    """Desired on-demand, desired expected (spot where it is used and published) and max on-demand."""
    catalog: Catalog = ctx.catalog
    gpus = {"min": 0, "desired": 0, "max": 0}
    hourly = {"desired_on_demand": 0.0, "desired_expected": 0.0, "max_on_demand": 0.0}
    groups: list[dict] = []
    unpriced: list[str] = []
    for group in spec.node_groups:
        inst = catalog.get(spec.cloud, group.instance_types[0])
        if inst is None:
            continue
        for key in gpus:
            gpus[key] += getattr(group.size, key) * inst.gpu.count
        fabric, interfaces = _fabric_in_use(group, spec, ctx)
        groups.append({"name": group.name, "instance_type": inst.name, "fabric": fabric, "interfaces": interfaces,
                       "capacity": group.capacity, "size": group.size.model_dump()})
        at_max = hourly_cost(inst, spec.region, group.size.max)
        if at_max is None:
            unpriced.append(f"{inst.name} in {spec.region}")
            continue
        spot_nodes = max(0, group.size.desired - group.on_demand_base) if group.capacity in ("spot", "mixed") else 0
        hourly["desired_on_demand"] += hourly_cost(inst, spec.region, group.size.desired) or 0.0
        hourly["desired_expected"] += hourly_cost(inst, spec.region, group.size.desired, spot_nodes) or 0.0
        hourly["max_on_demand"] += at_max
    return Summary(
        gpus=gpus,
        hourly_usd={key: round(value, 4) for key, value in hourly.items()},
        node_groups=groups,
        unpriced=unpriced,
    )
