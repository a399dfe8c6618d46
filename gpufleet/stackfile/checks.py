"""Cross-field checks every cloud shares, run on the resolved cluster before any resource.

One small function per check; each returns the problems it found, naming the field path and the fix.
Checks only one cloud needs live in gpufleet/clouds/<cloud>/checks.py and run after these.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping
from ipaddress import IPv4Network
from typing import TYPE_CHECKING

from ..lock.image_ids import EXPECTED_REGION, is_valid_region
from .check_registry import CHECKS, check, group_check
from .errors import SpecError
from .keys import account_problem, arn_accounts, key_problem

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster, ResolvedGroup
    from .models import ClusterSpec

# RFC 1918 private address space: node networks live here.
PRIVATE_SPACE = (IPv4Network("10.0.0.0/8"), IPv4Network("172.16.0.0/12"), IPv4Network("192.168.0.0/16"))
# Longest derived name `<cluster>-<group>`: Azure scale set names stop at 64 and child names add suffixes.
MAX_DERIVED_NAME = 48
# Catalog types a message lists before saying how many more there are.
SHOWN_TYPES = 12

@group_check
def instance_types_known(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    cloud = cluster.spec.cloud
    for j, (name, row) in enumerate(zip(group.spec.instance_types, group.types, strict=True)):
        if row is None:
            names = cluster.catalog.names(cloud)
            close = difflib.get_close_matches(name, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            more = len(names) - SHOWN_TYPES
            shown = ", ".join(names[:SHOWN_TYPES]) + (f" and {more} more" if more > 0 else "")
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"unknown instance type {name!r} for {cloud}; {hint}the catalog has {shown} "
                f"(all: `gpufleet catalog --cloud {cloud}`)",
            )


@check
def group_names_unique(cluster: ResolvedCluster) -> Iterator[SpecError]:
    seen: set[str] = set()
    for group in cluster.groups:
        if group.name in seen:
            yield SpecError(group.path("name"), f"node group name {group.name!r} repeats; give each a new name")
        seen.add(group.name)
        derived = f"{cluster.spec.name}-{group.name}"
        if len(derived) > MAX_DERIVED_NAME:
            yield SpecError(
                group.path("name"),
                f"{derived!r} is {len(derived)} characters; cluster name plus group name must stay within "
                f"{MAX_DERIVED_NAME - 1} to be valid on every cloud: shorten either",
            )


@group_check
def size_ordered(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    s = group.spec.size
    if not s.min <= s.desired <= s.max:
        yield SpecError(
            group.path("size"), f"needs min <= desired <= max, got min {s.min}, desired {s.desired}, max {s.max}"
        )


@group_check
def rdma_required_has_fabric(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if group.spec.rdma != "required":
        return
    for j, row in enumerate(group.types):
        if row is not None and not row.rdma:
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"{row.name} has no RDMA fabric but rdma is required; pick a type with one "
                f"(`gpufleet catalog --cloud {cluster.spec.cloud}`) or set rdma: auto",
            )


@group_check
def fallbacks_share_fabric(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    primary = group.primary
    if primary is None or not group.rdma:
        return
    for j, row in enumerate(group.types[1:], start=1):
        if row is not None and row.fabric.kind != primary.fabric.kind:
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"{row.name} has fabric {row.fabric.kind}, the primary {primary.name} has "
                f"{primary.fabric.kind}: nodes of one RDMA group must share a fabric; move it to its own group",
            )


@group_check
def rdma_in_one_zone(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    zones, zone = cluster.spec.network.zones, group.spec.zone
    if zone is not None and zone not in zones:
        yield SpecError(group.path("zone"), f"{zone!r} is not in network.zones {zones}")
    if zone is None and len(zones) > 1 and group.rdma:
        yield SpecError(
            group.path("zone"),
            f"an RDMA group must sit in exactly one zone and network.zones has {len(zones)}; "
            f"set node_groups[{group.index}].zone to one of {zones}, or rdma: off",
        )


@group_check
def types_offered_in_region(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    """A type the catalog lists as not offered in the stack's region never launches there (DESIGN: refused)."""
    region = cluster.spec.region
    for j, row in enumerate(group.types):
        price = row.price(region) if row is not None else None
        if price is not None and not price.offered:
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"{row.name} is not offered in {region} per the catalog ({price.source}): remove it or pick a "
                "region that sells it",
            )


@group_check
def capacity_offered(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    offered = cluster.backend.capacities
    if group.spec.capacity not in offered:
        yield SpecError(
            group.path("capacity"),
            f"capacity {group.spec.capacity} does not exist on {cluster.spec.cloud}; use one of: "
            f"{', '.join(sorted(offered))}",
        )


@group_check
def reservation_targets(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    capacity = group.spec.capacity
    if capacity in ("capacity-block", "reservation") and not group.spec.reservation_id:
        yield SpecError(group.path("reservation_id"), f"capacity {capacity} needs the reservation id it draws from")
    if group.spec.provisioner == "fleet" and capacity in ("capacity-block", "reservation"):
        yield SpecError(
            group.path("provisioner"),
            f"capacity {capacity} is targeted through a scaling group; set provisioner: autoscaling",
        )


@group_check
def on_demand_base_fits(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    base = group.spec.on_demand_base
    if group.spec.capacity == "mixed" and base == 0:
        yield SpecError(
            group.path("on_demand_base"),
            "mixed means on-demand nodes first, then spot: set on_demand_base > 0, or capacity: spot",
        )
    if base > group.spec.size.max:
        yield SpecError(group.path("on_demand_base"), f"{base} on-demand nodes exceed size.max {group.spec.size.max}")


@group_check
def spot_price_capped(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    cap, region = group.spec.spot_max_price, cluster.spec.region
    if cap is None:
        return
    if not group.spec.spot:
        yield SpecError(group.path("spot_max_price"), "applies to capacity spot or mixed only; remove it")
        return
    for row in group.known_types:
        price = row.price(region)
        if price and price.on_demand is not None and cap > price.on_demand:
            yield SpecError(
                group.path("spot_max_price"),
                f"{cap} USD/h is above the on-demand price of {row.name} in {region} "
                f"({price.on_demand}); leave it null to cap at on-demand",
            )


@check
def image_profile_known(cluster: ResolvedCluster) -> Iterator[SpecError]:
    spec, lock = cluster.spec, cluster.lock
    if spec.image not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        yield SpecError("image", f"unknown image profile {spec.image!r}; images/lock.yaml has: {known}")
    elif cluster.image is None and lock.profiles[spec.image].baked:  # unbaked entries plan; ack_checks: ACK's own
        yield SpecError(
            "image",
            f"profile {spec.image!r} has no {spec.cloud} image in {spec.region}; bake one "
            f"(stacks/Pulumi.{spec.cloud}-images.yaml) and add its id to images/lock.yaml",
        )


@check
def network_source(cluster: ResolvedCluster) -> Iterator[SpecError]:
    net = cluster.spec.network
    names = " / ".join(net.BRING)
    brought = net.brought()
    if net.cidr is None and not brought:
        yield SpecError("network", f"set network.cidr to create a network, or bring one with {names}")
    if net.cidr is not None and brought:
        yield SpecError("network", f"set either network.cidr or {', '.join(brought)}, not both")
    per_zone = getattr(net, net.PER_ZONE) if net.PER_ZONE else None
    if per_zone and len(per_zone) != len(net.zones):
        yield SpecError(
            f"network.{net.PER_ZONE}",
            f"list one per zone, in the order of network.zones ({len(net.zones)} zones, {len(per_zone)} given)",
        )


@check
def network_cidr_private_and_sized(cluster: ResolvedCluster) -> Iterator[SpecError]:
    cidr, cloud = cluster.spec.network.cidr, cluster.spec.cloud
    if cidr is None:
        return
    if not any(cidr.subnet_of(space) for space in PRIVATE_SPACE):
        spaces = ", ".join(str(space) for space in PRIVATE_SPACE)
        yield SpecError("network.cidr", f"{cidr} is not private address space (RFC 1918: {spaces}); pick one there")
    limits = cluster.catalog.limits(cloud)
    low, high = limits.get("network_prefix_min"), limits.get("network_prefix_max")
    if isinstance(low, int) and isinstance(high, int) and not low <= cidr.prefixlen <= high:
        yield SpecError("network.cidr", f"{cloud} networks take a /{low} to /{high} prefix, got /{cidr.prefixlen}")


@check
def zones_of_the_region(cluster: ResolvedCluster) -> Iterator[SpecError]:
    spec = cluster.spec
    pattern = cluster.backend.zone_pattern(spec.region)
    seen: set[str] = set()
    for i, zone in enumerate(spec.network.zones):
        if zone in seen:
            yield SpecError(f"network.zones[{i}]", f"{zone!r} is listed twice; list each zone once")
        seen.add(zone)
        if pattern is not None and not re.fullmatch(pattern, zone):
            yield SpecError(f"network.zones[{i}]", f"{zone!r} is not a zone of {spec.region} (region {spec.region})")


@check
def tags_within_the_clouds_limits(cluster: ResolvedCluster) -> Iterator[SpecError]:
    yield from tags_within_limits(cluster.catalog.limits(cluster.spec.cloud), cluster.spec.cloud, cluster.spec.tags)


def tags_within_limits(limits: Mapping[str, int | str], cloud: str, tags: Mapping[str, str]) -> Iterator[SpecError]:
    """Tag keys and values against the cloud's published limits (catalog data): lengths, reserved prefixes."""
    key_max, value_max = limits.get("tag_key_max_chars"), limits.get("tag_value_max_chars")
    reserved = [p for p in str(limits.get("tag_reserved_prefixes", "")).split(",") if p]
    for key, value in tags.items():
        if isinstance(key_max, int) and len(key) > key_max:
            yield SpecError(f"tags.{key}", f"the key is {len(key)} characters; {cloud} allows {key_max}")
        if isinstance(value_max, int) and len(value) > value_max:
            yield SpecError(f"tags.{key}", f"the value is {len(value)} characters; {cloud} allows {value_max}")
        taken = next((p for p in reserved if key.lower().startswith(p)), None)
        if taken:
            yield SpecError(f"tags.{key}", f"keys starting with {taken!r} are reserved by {cloud}; rename it")


@check
def region_of_the_cloud(cluster: ResolvedCluster) -> Iterator[SpecError]:
    yield from regions_of_the_cloud(cluster.spec.cloud, [("region", cluster.spec.region)])


def regions_of_the_cloud(cloud: str, named: Iterable[tuple[str, str]]) -> Iterator[SpecError]:
    """Each (field path, region) that is not named as `cloud` names its regions, or repeats an earlier one."""
    seen: set[str] = set()
    for field, region in named:
        if not is_valid_region(cloud, region):
            yield SpecError(field, f"{region!r} is not {EXPECTED_REGION[cloud]}")
        elif region in seen:
            yield SpecError(field, f"{region!r} is listed twice; list each region once")
        seen.add(region)


def _allowed_values(text: str) -> tuple[set[int], list[tuple[int, int]]]:
    """A catalog list like "1,3,5" or "1-3650": the single values and the inclusive ranges it names."""
    single: set[int] = set()
    ranges: list[tuple[int, int]] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if dash:
            ranges.append((int(low), int(high)))
        else:
            single.add(int(low))
    return single, ranges


def retention_problem(limits: Mapping[str, object], cloud: str, days: int) -> str | None:
    """Why the cloud's log store cannot keep events `days` days (catalog limits log_retention_days), or None."""
    allowed = limits.get("log_retention_days")
    if allowed is None:
        return f"gpufleet creates no log store on {cloud}, so nothing would keep it; remove it"
    single, ranges = _allowed_values(str(allowed))
    if days not in single and not any(low <= days <= high for low, high in ranges):
        return f"{cloud} does not accept {days} days; use one of {allowed}"
    return None


@check
def log_retention_the_cloud_keeps(cluster: ResolvedCluster) -> Iterator[SpecError]:
    cloud, monitoring = cluster.spec.cloud, cluster.spec.monitoring
    limits = cluster.catalog.limits(cloud)
    if "log_retention_days" not in limits and "log_retention_days" not in monitoring.model_fields_set:
        return
    if problem := retention_problem(limits, cloud, monitoring.log_retention_days):
        yield SpecError("monitoring.log_retention_days", problem)


def operations_in_use(cluster: ResolvedCluster) -> Iterator[tuple[str, str]]:
    """(operation, field path) of each operations option the stack sets: monitoring, idle, budget alerts, shared
    storage. A default the stack did not write (monitoring.gpu_metrics) is not counted as set."""
    spec = cluster.spec
    if "monitoring" in spec.model_fields_set:
        yield "monitoring", "monitoring"
    for group in cluster.groups:
        if group.spec.idle is not None:
            yield "idle", group.path("idle")
    if spec.monitoring.alarms is not None and spec.monitoring.alarms.emails:
        yield "alarm_emails", "monitoring.alarms.emails"
    if spec.budget.alert_at_percent:
        yield "budget_alerts", "budget.alert_at_percent"
    if spec.storage.shared is not None:
        yield "shared_storage", "storage.shared"


@check
def operations_built(cluster: ResolvedCluster) -> Iterator[SpecError]:
    # Refused rather than ignored: a stack must never believe it has alarms or a budget alert it does not.
    cloud, built, gaps = cluster.spec.cloud, cluster.backend.operations, cluster.backend.operation_gaps
    for operation, path in operations_in_use(cluster):
        if operation not in built:
            yield SpecError(path, f"not available on {cloud}: {gaps[operation]}; remove it")


@group_check
def idle_can_scale_down(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    idle, size = group.spec.idle, group.spec.size
    if idle is None:
        return
    if not cluster.spec.monitoring.gpu_metrics:
        yield SpecError(group.path("idle"), "idle scaling reads the GPU metrics: set monitoring.gpu_metrics: true")
    if size.min >= size.max:
        yield SpecError(
            group.path("idle"),
            f"scales the group to size.min ({size.min}), which is also its max: lower size.min (0 scales to zero)",
        )


def stack_accounts(spec: ClusterSpec) -> frozenset[str]:
    """The accounts (subscriptions) the stack names as its own: its identity's ARNs and ids, its alarm target."""
    identity = getattr(spec, "identity", None)
    named = [*(identity.model_dump().values() if identity is not None else ()),
             spec.monitoring.alarms.target if spec.monitoring.alarms else None]
    return arn_accounts(*named)


@check
def key_of_the_stack(cluster: ResolvedCluster) -> Iterator[SpecError]:
    # A brought key: the customer's, in the stack's region, and in the account the stack's other ARNs name (or one
    # the organisation grants); on Azure the brought key's vault says its subscription.
    spec = cluster.spec
    if spec.storage.kms_key == "create":
        return
    accounts = stack_accounts(spec)
    problem = key_problem(spec.cloud, spec.storage.kms_key, spec.region, accounts)
    if problem:
        yield SpecError("storage.kms_key", problem)
    vault = getattr(spec.storage, "key_vault_id", None)
    if vault and (problem := account_problem(vault, accounts)):
        yield SpecError("storage.key_vault_id", problem)


def run_checks(cluster: ResolvedCluster) -> list[SpecError]:
    """Every problem the shared checks and then the cloud's own checks find."""
    return [error for fn in (*CHECKS, *cluster.backend.checks) for error in fn(cluster)]


# The gpu_sharing and scheduler checks register after the ones above, so errors keep this order.
from . import sharing_checks  # noqa: E402, F401, I001
from . import scheduler_checks  # noqa: E402, F401
from . import ack_checks  # noqa: E402, F401
from . import slurm_checks  # noqa: E402, F401
from . import system_group_checks  # noqa: E402, F401
