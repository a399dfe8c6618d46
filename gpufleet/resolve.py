"""Resolve a stack's `gpufleet:cluster` once: the validated spec plus everything derived from it.

Spec checks, the components, the bootstrap, the plan summary, preflight and the policy pack config all read a
ResolvedCluster; none of them works out again which catalog rows a group uses, whether it runs RDMA, over which
fabric and how many interfaces per type, in which zones, under which names, the lock's profile and image entry,
or whether alarms need a target created or one brought. Whether a group runs spot is its model's (NodeGroup.spot).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter

from .catalog import Catalog, InstanceType, hourly_cost, load_catalog, most_expensive
from .clouds.lookup import backend
from .clouds.registry import CLOUDS
from .lock.boot_modes import BootMode, common_boot_mode
from .stackfile.errors import SpecError, SpecInvalid, field_path, split_field_path
from .stackfile.models import ClusterSpec, NodeGroup
from .stackfile.validate import discriminated_union, parse_with

if TYPE_CHECKING:
    from .clouds.backend import CloudBackend
    from .lock.model import ImageEntry, Lock, Profile


@dataclass(frozen=True)
class GroupCost:
    """USD per hour of a group at the type its cloud prices it at (its primary; on Alibaba Cloud cost-optimised
    groups, the most expensive: CloudBackend.priced_type) (catalog.pricing.hourly_cost): the stack's price for the
    type when `prices` gives one, else the catalog snapshot."""

    desired_on_demand: float
    desired_expected: float
    """Desired size with its spot nodes at the spot price (on-demand where none is given)."""
    max_on_demand: float
    """What the budget is checked against: size.max at the group's most expensive type (catalog.most_expensive)."""


@dataclass(frozen=True)
class FabricInUse:
    """The RDMA fabric a node of one instance type uses in its group, as the cloud's backend counts it."""

    kind: str
    """efa, infiniband, erdma, roce; none without RDMA (or on a type without interfaces)."""
    interfaces: int
    """RDMA interfaces (EFA, IB HCAs, ERIs) the node must show; 0 with kind none."""


NO_FABRIC = FabricInUse("none", 0)


@dataclass(frozen=True)
class ResolvedGroup:
    """One node group with what the catalog, the fabric and the cloud's naming make of it."""

    index: int
    spec: NodeGroup
    types: tuple[InstanceType | None, ...]
    """Catalog row of each of spec.instance_types, in order; None for a type the catalog lacks."""
    rdma: bool
    """RDMA in use: required, or auto on a primary type with a fabric."""
    fabrics: tuple[FabricInUse, ...]
    """The fabric a node of each of spec.instance_types uses, in order (none for a type the catalog lacks)."""
    zones: tuple[str, ...]
    names: Mapping[str, str]
    """Names the group's resources need before they exist (e.g. scaling_group), by role."""
    cost: GroupCost | None
    """None when the primary type is unknown or has no on-demand price in the region: unknown, not 0."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def primary(self) -> InstanceType | None:
        return self.types[0]

    @property
    def fabric(self) -> str:
        """Fabric kind the primary type uses (efa, infiniband, erdma, roce) or none."""
        return self.fabrics[0].kind

    @property
    def interfaces(self) -> int:
        """RDMA interfaces per node of the primary type in use (0 without RDMA)."""
        return self.fabrics[0].interfaces

    @property
    def known_types(self) -> list[InstanceType]:
        return [t for t in self.types if t is not None]

    def path(self, field: str) -> str:
        """Field path of a field of this group in the stack file, e.g. node_groups[1].size."""
        return f"node_groups[{self.index}].{field}"


@dataclass(frozen=True)
class ResolvedCluster:
    spec: ClusterSpec
    groups: tuple[ResolvedGroup, ...]
    catalog: Catalog
    lock: Lock

    @property
    def backend(self) -> CloudBackend:
        return backend(self.spec.cloud)

    @property
    def profile(self) -> Profile | None:
        """The lock's profile the stack names (spec.image); None only for a stack the checks refuse."""
        return self.lock.profiles.get(self.spec.image)

    @property
    def image(self) -> ImageEntry | None:
        """The lock's image of that profile for the stack's cloud and region, baked (an id) or not (id null, with
        the stack that bakes it); None only for a stack the checks refuse. Where the lock keeps an image per boot
        mode, the one a group boots that is not baked yet, else the first group's (whether the cluster can boot)."""
        booted = [entry for group in self.groups if (entry := self.group_image(group)) is not None]
        if booted:
            return next((entry for entry in booted if entry.id is None), booted[0])
        return self.lock.image_entry(self.spec.image, self.spec.cloud, self.spec.region)

    def image_boot_modes(self) -> list[BootMode | None]:
        """The boot modes the lock keeps an image of the profile for in the region ([None]: one image, no mode)."""
        return list(self.lock.image_entries(self.spec.image, self.spec.cloud, self.spec.region))

    def group_boot_mode(self, group: ResolvedGroup) -> BootMode | None:
        """The boot mode of the image the group boots: one every type of it boots and the lock has an image for,
        UEFI first; None where the lock keeps one image (no boot mode) or where none fits (the checks refuse it)."""
        modes = [mode for mode in self.image_boot_modes() if mode is not None]
        if not modes or any(t is None or t.boot_modes is None for t in group.types):
            return None
        return common_boot_mode((t.boot_modes for t in group.known_types), modes)

    def group_image(self, group: ResolvedGroup) -> ImageEntry | None:
        """The lock's image the group boots (see group_boot_mode); None where it has none for the group."""
        entries = self.lock.image_entries(self.spec.image, self.spec.cloud, self.spec.region)
        if None in entries:
            return entries[None]
        mode = self.group_boot_mode(group)
        return entries.get(mode) if mode is not None else None

    @property
    def alarm_target_mode(self) -> Literal["create", "bring"] | None:
        """How alarms and budget alerts reach people: "bring" when monitoring.alarms.target names the cloud's
        notification target, "create" when alarms or budget alerts need one and none is brought (the stack's own
        topic / action group / contact group, with the alarm emails as recipients), None when nothing notifies."""
        alarms = self.spec.monitoring.alarms
        if alarms is not None and alarms.target != "create":
            return "bring"
        if alarms is not None or self.spec.budget.alert_at_percent:
            return "create"
        return None

    def addresses_at_max(self, per_zone: bool = True) -> dict[str, int]:
        """Private addresses the node groups take at max size, per zone ("" for a regional group): a group
        over several zones may land every node in one of them, so each of its zones counts all of them. With
        per_zone False, one total under "" (one subnet serves every zone)."""
        demand: dict[str, int] = {}
        for group in self.groups:
            if group.primary is None:
                continue
            per_node = self.backend.addresses_per_node(group.primary, group.rdma)
            for zone in (group.zones or ("",)) if per_zone else ("",):
                demand[zone] = demand.get(zone, 0) + group.spec.size.max * per_node
        return demand

    def usable_addresses(self, subnet: IPv4Network) -> int:
        """Addresses of a subnet left for nodes once the cloud's reserved ones are taken (catalog limit)."""
        return subnet.num_addresses - int(self.catalog.limit(self.spec.cloud, "subnet_reserved_addresses"))


def _zones(spec: ClusterSpec, group: NodeGroup, rdma: bool) -> tuple[str, ...]:
    """Its pinned zone; the first zone for RDMA groups (the checks refuse several); else every zone."""
    if group.zone:
        return (group.zone,)
    return tuple(spec.network.zones[:1] if rdma else spec.network.zones)


def _group(spec: ClusterSpec, index: int, group: NodeGroup, cloud: CloudBackend, catalog: Catalog) -> ResolvedGroup:
    types = tuple(catalog.get(spec.cloud, name) for name in group.instance_types)
    primary = types[0]
    rdma = group.rdma != "off" and (group.rdma == "required" or (primary is not None and primary.rdma))
    return ResolvedGroup(
        index=index,
        spec=group,
        types=types,
        rdma=rdma,
        fabrics=tuple(_fabric(cloud, t, rdma) for t in types),
        zones=_zones(spec, group, rdma),
        names=cloud.group_names(spec, group.name),
        cost=_cost(priced, types, spec, group) if (priced := cloud.priced_type(spec, group, types)) else None,
    )


def _fabric(cloud: CloudBackend, instance: InstanceType | None, rdma: bool) -> FabricInUse:
    in_use = cloud.interfaces_in_use(instance, rdma) if instance is not None else 0
    return FabricInUse(instance.fabric.kind, in_use) if instance is not None and in_use else NO_FABRIC


def _cost(
    priced: InstanceType, types: tuple[InstanceType | None, ...], spec: ClusterSpec, group: NodeGroup
) -> GroupCost | None:
    """Desired at the backend's priced type (what launches first); max at the group's most expensive type, the
    worst case a budget covers (catalog.most_expensive)."""
    size, stack_price = group.size, spec.prices.get(priced.name)
    spot = max(0, size.desired - group.on_demand_base) if group.spot else 0
    desired = hourly_cost(priced, spec.region, size.desired, 0, stack_price)
    expected = hourly_cost(priced, spec.region, size.desired, spot, stack_price)
    worst = most_expensive(list(zip(group.instance_types, types, strict=True)), spec.region, spec.prices)
    maximum = hourly_cost(worst[1], spec.region, size.max, 0, worst[2]) if worst is not None else None
    if desired is None or expected is None or maximum is None:
        return None
    return GroupCost(desired, expected, maximum)


@cache
def _cluster_adapter() -> TypeAdapter[Any]:
    return discriminated_union([backend(cloud).spec_model for cloud in CLOUDS])


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of `gpufleet:cluster`: one branch per cloud, chosen by `cloud`."""
    return {"title": "gpufleet:cluster", **_cluster_adapter().json_schema()}


def resolve_cluster(raw: Any, catalog: Catalog | None = None, lock: Lock | None = None) -> ResolvedCluster:
    """Validate a `gpufleet:cluster` value and resolve it; SpecInvalid lists every problem, by field."""
    from .lock import load_lock
    from .stackfile.checks import run_checks

    try:
        spec: ClusterSpec = parse_with(_cluster_adapter(), raw, CLOUDS)
    except SpecInvalid as invalid:
        raise SpecInvalid([*invalid.errors, *_checks_despite(raw, invalid.errors, catalog, lock)]) from None
    catalog = catalog or load_catalog()
    cloud = backend(spec.cloud)
    resolved = ResolvedCluster(
        spec=spec,
        groups=tuple(_group(spec, i, g, cloud, catalog) for i, g in enumerate(spec.node_groups)),
        catalog=catalog,
        lock=lock or load_lock(),
    )
    errors = run_checks(resolved)
    if errors:
        raise SpecInvalid(errors)
    return resolved


def _checks_despite(raw: Any, errors: list[SpecError], catalog: Catalog | None, lock: Lock | None) -> list[SpecError]:
    """The checks' findings on the rest of a stack whose fields failed validation, so one run reports every
    problem (a bad vpc_id does not hide a size the checks refuse): the failing fields are left out and the rest
    is resolved again; findings in a section that lost a field are dropped (they would judge what the stack did
    not say). Nothing when a failing field cannot be left out."""
    trimmed, sections = copy.deepcopy(raw), set()
    for error in errors:
        parts = split_field_path(error.path) or []
        parent: Any = trimmed
        for part in parts[:-1]:
            fits = isinstance(parent, dict) and part in parent or isinstance(parent, list) and isinstance(part, int)
            parent = parent[part] if fits and (isinstance(parent, dict) or part < len(parent)) else None
        if not parts or not isinstance(parent, dict) or parts[-1] not in parent:
            return []
        del parent[parts[-1]]
        sections.add(field_path("", tuple(parts[:2] if len(parts) > 1 and isinstance(parts[1], int) else parts[:1])))
    try:
        resolve_cluster(trimmed, catalog, lock)
    except SpecInvalid as invalid:
        return [e for e in invalid.errors
                if not any(e.path == s or e.path.startswith((f"{s}.", f"{s}[")) for s in sections)]
    return []
