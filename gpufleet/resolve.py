"""Resolve a stack's `gpufleet:cluster` once: the validated spec plus everything derived from it.

Spec checks, the components, the bootstrap, the plan summary, preflight and the policy pack config all read a
ResolvedCluster; none of them works out again which catalog rows a group uses, whether it runs RDMA, over which
fabric and how many interfaces per type, in which zones, under which names, the lock's profile and image entry,
or whether alarms need a target created or one brought. Whether a group runs spot is its model's (NodeGroup.spot).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from . import derived_cache
from .catalog import Catalog, InstanceType, hourly_cost, load_catalog, most_expensive
from .clouds.backend import NO_FABRIC, CloudBackend, FabricInUse, GroupCost, ResolvedCluster, ResolvedGroup
from .clouds.lookup import backend
from .clouds.registry import CLOUDS
from .stackfile.errors import SpecInvalid
from .stackfile.left_out import findings_despite
from .stackfile.models import ClusterSpec, NodeGroup
from .stackfile.validate import branches_by_tag, discriminated_union, parse_by_cloud

if TYPE_CHECKING:
    from .lock.model import Lock


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


def _spec_model(cloud: str) -> type[ClusterSpec]:
    return backend(cloud).spec_model


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of `gpufleet:cluster`: one branch per cloud, chosen by `cloud` (validate.branches_by_tag), each
    naming its cloud's instance types and regions (the catalog's and the image lock's)."""
    from .lock import load_lock

    schema = derived_cache.kept("cluster-json-schema", b"", lambda: _cluster_adapter().json_schema())
    defs, mapping = schema["$defs"], schema["discriminator"]["mapping"]
    catalog, lock = load_catalog(), load_lock()
    for cloud, ref in mapping.items():
        instances = catalog.instances(cloud)
        regions = sorted({region for inst in instances for region in inst.prices} | set(lock.regions(cloud)))
        branch = defs[ref.removeprefix("#/$defs/")]["properties"]
        branch["region"] = {**branch["region"], "enum": regions}
        groups = branch["node_groups"]
        groups["items"] = {"allOf": [groups["items"], {"properties": {"instance_types": {
            "description": f"{cloud} catalog types (`gpufleet catalog --cloud {cloud}`)",
            "items": {"enum": sorted(inst.name for inst in instances)}}}}]}
    return branches_by_tag(schema, "gpufleet:cluster")


def resolve_cluster(raw: Any, catalog: Catalog | None = None, lock: Lock | None = None) -> ResolvedCluster:
    """Validate a `gpufleet:cluster` value and resolve it; SpecInvalid lists every problem, by field."""
    from .lock import load_lock
    from .stackfile.checks import run_checks

    try:
        spec: ClusterSpec = parse_by_cloud(_cluster_adapter, _spec_model, raw, CLOUDS)
    except SpecInvalid as invalid:
        rest = findings_despite(raw, invalid.errors, lambda trimmed: resolve_cluster(trimmed, catalog, lock))
        raise SpecInvalid([*invalid.errors, *rest]) from None
    catalog = catalog or load_catalog()
    cloud = backend(spec.cloud)
    resolved = ResolvedCluster(
        spec=spec,
        groups=tuple(_group(spec, i, g, cloud, catalog) for i, g in enumerate(spec.node_groups)),
        catalog=catalog,
        lock=lock or load_lock(),
        backend=cloud,
    )
    errors = run_checks(resolved)
    if errors:
        raise SpecInvalid(errors)
    return resolved
