"""Resolve a stack's `gpufleet:cluster` once: the validated spec plus everything derived from it.

Spec checks, the components, the bootstrap, the plan summary, preflight and the policy pack config all read a
ResolvedCluster; none of them works out again which catalog rows a group uses, whether it runs RDMA, over which
fabric and how many interfaces per type, in which zones, under which names, the lock's profile and image entry,
or whether alarms need a target created or one brought. Whether a group runs spot is its model's (NodeGroup.spot).
"""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from .catalog import Catalog, InstanceType, hourly_cost, load_catalog, most_expensive
from .clouds.backend import NO_FABRIC, CloudBackend, FabricInUse, GroupCost, ResolvedCluster, ResolvedGroup
from .clouds.lookup import backend
from .clouds.registry import CLOUDS
from .stackfile.errors import SpecError, SpecInvalid, field_path, split_field_path
from .stackfile.models import ClusterSpec, NodeGroup
from .stackfile.validate import branches_by_tag, discriminated_union, parse_with

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


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of `gpufleet:cluster`: one branch per cloud, chosen by `cloud` (validate.branches_by_tag), each
    naming its cloud's instance types and regions (the catalog's and the image lock's)."""
    from .lock import load_lock

    schema = _cluster_adapter().json_schema()
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
        backend=cloud,
    )
    errors = run_checks(resolved)
    if errors:
        raise SpecInvalid(errors)
    return resolved


def _checks_despite(raw: Any, errors: list[SpecError], catalog: Catalog | None, lock: Lock | None) -> list[SpecError]:
    """The checks' findings on the rest of a stack whose fields failed validation, so one run reports every
    problem (a bad vpc_id does not hide a size the checks refuse, a bad `rdma` not the group's zone): the failing
    fields are left out and the rest is resolved again; a list item missing a required field (a node group without
    instance_types) is left out whole, and the findings on the items after it keep their own index. A left-out field
    reads as its default there, so a finding that may judge it is dropped: one at, under or above it, or whose
    message names it or the left-out item's name. Nothing when a required field outside any list is missing."""
    trimmed, removed, words = copy.deepcopy(raw), [], []
    items: dict[tuple[str | int, ...], set[int]] = {}
    for error in errors:
        parts = split_field_path(error.path) or []
        parent = _at(trimmed, parts[:-1])
        if parts and isinstance(parent, dict) and parts[-1] in parent:
            del parent[parts[-1]]
            removed.append(parts)
            words.append(str(parts[-1]))
            continue
        where = max((i for i, part in enumerate(parts[:-1]) if isinstance(part, int)), default=None)
        if where is None:
            return []
        items.setdefault(tuple(parts[:where]), set()).add(int(parts[where]))
        removed.append(parts[:where + 1])
    for list_path, indexes in items.items():
        found = _at(trimmed, list(list_path))
        if not isinstance(found, list):
            return []
        for index in sorted(indexes, reverse=True):
            if index < len(found):
                name = found[index].get("name") if isinstance(found[index], dict) else None
                words.extend([name] if isinstance(name, str) else [])
                del found[index]
    try:
        resolve_cluster(trimmed, catalog, lock)
    except SpecInvalid as invalid:
        findings = [_renumbered(e, items) for e in invalid.errors]
        return [e for e in findings if not any(_at_or_near(e, parts) for parts in removed) and not _names(e, words)]
    return []


def _at(value: Any, parts: list[str | int]) -> Any:
    """The value at field path `parts` of `value`; None where there is none."""
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return None
    return value


def _renumbered(finding: SpecError, items: dict[tuple[str | int, ...], set[int]]) -> SpecError:
    """`finding` on the trimmed stack with its list index as in the file, where items before it were left out."""
    parts = split_field_path(finding.path) or []
    for list_path, left_out in items.items():
        at = len(list_path)
        if tuple(parts[:at]) == list_path and len(parts) > at and isinstance(parts[at], int):
            kept = [index for index in range(parts[at] + len(left_out) + 1) if index not in left_out]
            parts[at] = kept[parts[at]]
            return SpecError(field_path("", tuple(parts)), finding.message)
    return finding


def _at_or_near(finding: SpecError, removed: list[str | int]) -> bool:
    """Whether `finding` is at, under or above the left-out path `removed`."""
    path = split_field_path(finding.path) or []
    return path[:len(removed)] == removed or removed[:len(path)] == path


def _names(finding: SpecError, words: list[str]) -> bool:
    """Whether `finding`'s message names one of `words` (a left-out field or item): it may judge what stands in."""
    return any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", finding.message, re.IGNORECASE) for word in words)
