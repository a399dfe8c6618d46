"""GPU counts and hourly cost of a cluster spec from the catalog's price snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..resolve import ResolvedCluster


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


def summarize(cluster: ResolvedCluster) -> Summary:
    """Desired on-demand, desired expected (spot where it is used and published) and max on-demand."""
    spec = cluster.spec
    gpus = {"min": 0, "desired": 0, "max": 0}
    hourly = {"desired_on_demand": 0.0, "desired_expected": 0.0, "max_on_demand": 0.0}
    groups: list[dict] = []
    unpriced: list[str] = []
    for resolved in cluster.groups:
        group, inst = resolved.spec, resolved.primary
        if inst is None:
            continue
        for key in gpus:
            gpus[key] += getattr(group.size, key) * inst.gpu.count
        groups.append({"name": group.name, "instance_type": inst.name, "fabric": resolved.fabric,
                       "interfaces": resolved.interfaces,
                       "capacity": group.capacity, "size": group.size.model_dump()})
        if resolved.cost is None:
            unpriced.append(f"{inst.name} in {spec.region}")
            continue
        for key in hourly:
            hourly[key] += getattr(resolved.cost, key)
    return Summary(
        gpus=gpus,
        hourly_usd={key: round(value, 4) for key, value in hourly.items()},
        node_groups=groups,
        unpriced=unpriced,
    )
