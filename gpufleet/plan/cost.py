"""GPU counts and hourly cost of a cluster spec from the catalog's price snapshots, or the stack's own
prices where it gives them (listed in `stack_priced`, with the source the stack named)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import SystemType, hourly_cost
from ..catalog.pricing import PricedRow
from ..clouds.backend import ResolvedCluster
from ..stackfile.models import StackPrice


@dataclass
class Summary:
    gpus: dict[str, int]
    hourly_usd: dict[str, float | None]
    """None throughout when a group has no price: a partial sum would read as the cluster's cost."""
    node_groups: list[dict]
    unpriced: list[str] = field(default_factory=list)
    stack_priced: list[str] = field(default_factory=list)
    """Every type of a group the stack's `prices` prices, beside the catalog's price for it (_beside_catalog)."""

    def to_json(self) -> dict:
        out: dict = {"gpus": self.gpus, "hourly_usd": self.hourly_usd, "node_groups": self.node_groups}
        if self.unpriced:
            out["unpriced"] = self.unpriced
        if self.stack_priced:
            out["stack_priced"] = self.stack_priced
        return out


def _beside_catalog(group: str, name: str, row: PricedRow | None, given: StackPrice, region: str) -> str:
    """A stack-supplied price with the catalog's for the same type beside it, so a reviewer sees the difference."""
    listed = row.price(region) if row is not None else None
    catalog = (f"catalog {listed.on_demand:g} USD/h" if listed is not None and listed.on_demand is not None
               else f"no catalog price in {region}")
    return f"{group}: {name} priced by the stack at {given.on_demand:g} USD/h ({given.source}); {catalog}"


@dataclass(frozen=True)
class CpuMachines:
    """On-demand CPU machines beside the GPU groups, priced from the catalog's system types (or the stack's prices)."""

    name: str
    role: str
    instance_type: str
    row: SystemType | None
    """None where the catalog has no row for the type: unpriced, never guessed."""
    min: int
    max: int


def cpu_machines(cluster: ResolvedCluster) -> list[CpuMachines]:
    """A Kubernetes cluster's system group (desired = min) and a Slurm cluster's head node (one machine)."""
    found = []
    if (system := cluster.system_type) is not None:
        size = cluster.spec.scheduler.system_group.size
        found.append(CpuMachines("system", "system", system[0], system[1], size.min, size.max))
    if (head := cluster.head_node_type) is not None:
        found.append(CpuMachines("slurm-head", "slurm-head", head[0], head[1], 1, 1))
    return found


def _cpu_row(cluster: ResolvedCluster, machines: CpuMachines) -> tuple[dict, dict[str, float] | None, str | None]:
    """The machines as a summary row (on-demand, desired = min), their cost (None: unpriced) and the note where the
    stack prices their type."""
    spec, name = cluster.spec, machines.instance_type
    entry = {"name": machines.name, "role": machines.role, "instance_type": name, "fabric": "none", "interfaces": 0,
             "capacity": "on-demand", "size": {"min": machines.min, "desired": machines.min, "max": machines.max}}
    given = spec.prices.get(name)
    note = _beside_catalog(machines.name, name, machines.row, given, spec.region) if given is not None else None
    desired = hourly_cost(machines.row, spec.region, machines.min, 0, given)
    maximum = hourly_cost(machines.row, spec.region, machines.max, 0, given)
    if desired is None or maximum is None:
        return entry, None, note
    return entry, {"desired_on_demand": desired, "desired_expected": desired, "max_on_demand": maximum}, note


def summarize(cluster: ResolvedCluster) -> Summary:
    """Desired on-demand, desired expected (spot where it is used and published) and max on-demand."""
    spec = cluster.spec
    gpus = {"min": 0, "desired": 0, "max": 0}
    hourly = {"desired_on_demand": 0.0, "desired_expected": 0.0, "max_on_demand": 0.0}
    groups: list[dict] = []
    unpriced: list[str] = []
    stack_priced: list[str] = []
    for resolved in cluster.groups:
        group, inst = resolved.spec, resolved.primary
        if inst is None:
            continue
        for key in gpus:
            gpus[key] += getattr(group.size, key) * inst.gpu.count
        groups.append({"name": group.name, "instance_type": inst.name, "fabric": resolved.fabric,
                       "interfaces": resolved.interfaces,
                       "capacity": group.capacity, "size": group.size.model_dump()})
        stack_priced += [_beside_catalog(group.name, name, row, spec.prices[name], spec.region)
                         for name, row in zip(group.instance_types, resolved.types, strict=True) if name in spec.prices]
        if resolved.cost is None:
            unpriced.append(f"{inst.name} in {spec.region}")
            continue
        for key in hourly:
            hourly[key] += getattr(resolved.cost, key)
    for machines in cpu_machines(cluster):
        entry, cost, stack_note = _cpu_row(cluster, machines)
        groups.append(entry)
        stack_priced += [stack_note] if stack_note else []
        if cost is None:
            what = "system group" if machines.role == "system" else "Slurm head node"
            unpriced.append(f"{entry['instance_type']} in {spec.region} ({what})")
        else:
            hourly = {key: value + cost[key] for key, value in hourly.items()}
    return Summary(
        gpus=gpus,
        hourly_usd={key: None if unpriced else round(value, 4) for key, value in hourly.items()},
        node_groups=groups,
        unpriced=unpriced,
        stack_priced=stack_priced,
    )
