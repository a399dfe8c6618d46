"""Cross-field checks of a cluster spec against the catalog and the image lock, run before any resource.

One small function per check; each returns the problems it found, naming the field path and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Protocol

from ..catalog import Catalog, InstanceType
from ..clouds.aws.efa import addresses_per_node
from .errors import SpecError
from .models import ClusterSpec, NodeGroup
from .sizing import private_subnet_cidrs, usable_addresses

# Azure: IB reaches only inside one scale set with singlePlacementGroup, capped at 100 VMs
# (setup-infiniband.md); the IB network reserves 172.16.0.0/16.
AZURE_IB_MAX_NODES = 100
AZURE_IB_RESERVED = IPv4Network("172.16.0.0/16")
# AWS Capacity Blocks for ML: up to 64 instances per block.
CAPACITY_BLOCK_MAX = 64
# Longest derived name `<cluster>-<group>`: Azure scale set names stop at 64 and child names add suffixes.
MAX_DERIVED_NAME = 48


class ImageLock(Protocol):
    profiles: dict


class LockWithImages(ImageLock, Protocol):
    def image_id(self, profile: str, cloud: str, region: str) -> str | None: ...

    def image_entry(self, profile: str, cloud: str, region: str) -> object | None: ...

    def base_image(self, cloud: str, region: str) -> str | None: ...


@dataclass(frozen=True)
class Context:
    catalog: Catalog
    lock: LockWithImages


Check = Callable[[ClusterSpec, Context], Iterator[SpecError]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    CHECKS.append(fn)
    return fn


def group_path(index: int, field: str = "") -> str:
    return f"node_groups[{index}]" + (f".{field}" if field else "")


def known_types(group: NodeGroup, ctx: Context, cloud: str) -> list[InstanceType]:
    return [t for name in group.instance_types if (t := ctx.catalog.get(cloud, name)) is not None]


def uses_rdma(group: NodeGroup, ctx: Context, cloud: str) -> bool:
    """rdma in effect: required, or auto on a primary type that has a fabric."""
    if group.rdma == "off":
        return False
    primary = ctx.catalog.get(cloud, group.instance_types[0])
    return group.rdma == "required" or (primary is not None and primary.rdma)


def group_zones(spec: ClusterSpec, group: NodeGroup, rdma: bool) -> list[str]:
    """Zones a group spans: its pinned zone, the first zone for RDMA groups, else every zone."""
    if group.zone:
        return [group.zone]
    return spec.network.zones[:1] if rdma else list(spec.network.zones)


@check
def instance_types_known(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        for j, name in enumerate(group.instance_types):
            if ctx.catalog.get(spec.cloud, name) is None:
                known = ", ".join(ctx.catalog.names(spec.cloud)[:12])
                yield SpecError(
                    group_path(i, f"instance_types[{j}]"),
                    f"unknown instance type {name!r} for {spec.cloud}; use one of: {known} "
                    f"(see `gpufleet catalog --cloud {spec.cloud}`)",
                )


@check
def group_names_unique(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    seen: set[str] = set()
    for i, group in enumerate(spec.node_groups):
        if group.name in seen:
            yield SpecError(group_path(i, "name"), f"node group name {group.name!r} repeats; give each a new name")
        seen.add(group.name)
        derived = f"{spec.name}-{group.name}"
        if len(derived) > MAX_DERIVED_NAME:
            yield SpecError(
                group_path(i, "name"),
                f"{derived!r} is {len(derived)} characters; cluster name plus group name must stay within "
                f"{MAX_DERIVED_NAME - 1} to be valid on every cloud: shorten either",
            )


@check
def size_ordered(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        s = group.size
        if not s.min <= s.desired <= s.max:
            yield SpecError(
                group_path(i, "size"),
                f"needs min <= desired <= max, got min {s.min}, desired {s.desired}, max {s.max}",
            )


@check
def rdma_required_has_fabric(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        if group.rdma != "required":
            continue
        for j, inst in enumerate(known_types(group, ctx, spec.cloud)):
            if not inst.rdma:
                yield SpecError(
                    group_path(i, f"instance_types[{j}]"),
                    f"{inst.name} has no RDMA fabric but rdma is required; pick a type with one "
                    f"(`gpufleet catalog --cloud {spec.cloud}`) or set rdma: auto",
                )


@check
def fallbacks_share_fabric(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        types = known_types(group, ctx, spec.cloud)
        if not types or not uses_rdma(group, ctx, spec.cloud):
            continue
        primary = types[0]
        for j, inst in enumerate(types[1:], start=1):
            if inst.fabric.kind != primary.fabric.kind:
                yield SpecError(
                    group_path(i, f"instance_types[{j}]"),
                    f"{inst.name} has fabric {inst.fabric.kind}, the primary {primary.name} has "
                    f"{primary.fabric.kind}: nodes of one RDMA group must share a fabric; move it to its own group",
                )


@check
def rdma_in_one_zone(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    zones = spec.network.zones
    for i, group in enumerate(spec.node_groups):
        if group.zone is not None and group.zone not in zones:
            yield SpecError(group_path(i, "zone"), f"{group.zone!r} is not in network.zones {zones}")
        if group.zone is None and len(zones) > 1 and uses_rdma(group, ctx, spec.cloud):
            yield SpecError(
                group_path(i, "zone"),
                f"an RDMA group must sit in exactly one zone and network.zones has {len(zones)}; "
                f"set node_groups[{i}].zone to one of {zones}, or rdma: off",
            )


@check
def reservation_targets(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        if group.capacity in ("capacity-block", "reservation") and not group.reservation_id:
            yield SpecError(
                group_path(i, "reservation_id"),
                f"capacity {group.capacity} needs the reservation id it draws from (e.g. cr-0123456789abcdef0)",
            )
        if group.capacity == "capacity-block":
            s = group.size
            if not s.min == s.desired == s.max:
                yield SpecError(
                    group_path(i, "size"),
                    f"a capacity block runs a fixed count: set min = desired = max (got {s.min}/{s.desired}/{s.max})",
                )
            if s.max > CAPACITY_BLOCK_MAX:
                yield SpecError(
                    group_path(i, "size.max"), f"a capacity block holds at most {CAPACITY_BLOCK_MAX} instances"
                )
            if spec.cloud != "aws":
                yield SpecError(group_path(i, "capacity"), "capacity-block exists on aws only")


@check
def fleet_capacity(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        if group.provisioner == "fleet" and group.capacity in ("capacity-block", "reservation"):
            yield SpecError(
                group_path(i, "provisioner"),
                f"capacity {group.capacity} is targeted through an Auto Scaling group; set provisioner: autoscaling",
            )


@check
def mixed_has_base(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        if group.capacity == "mixed" and group.on_demand_base == 0:
            yield SpecError(
                group_path(i, "on_demand_base"),
                "mixed means on-demand nodes first, then spot: set on_demand_base > 0, or capacity: spot",
            )


@check
def on_demand_base_fits(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        if group.on_demand_base > group.size.max:
            yield SpecError(
                group_path(i, "on_demand_base"),
                f"{group.on_demand_base} on-demand nodes exceed size.max {group.size.max}",
            )


@check
def spot_price_capped(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    for i, group in enumerate(spec.node_groups):
        if group.spot_max_price is None:
            continue
        if group.capacity not in ("spot", "mixed"):
            yield SpecError(group_path(i, "spot_max_price"), "applies to capacity spot or mixed only; remove it")
            continue
        for inst in known_types(group, ctx, spec.cloud):
            price = inst.price(spec.region)
            if price and price.on_demand is not None and group.spot_max_price > price.on_demand:
                yield SpecError(
                    group_path(i, "spot_max_price"),
                    f"{group.spot_max_price} USD/h is above the on-demand price of {inst.name} in {spec.region} "
                    f"({price.on_demand}); leave it null to cap at on-demand",
                )


@check
def image_profile_known(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    profiles = sorted(ctx.lock.profiles)
    if spec.image not in ctx.lock.profiles:
        yield SpecError("image", f"unknown image profile {spec.image!r}; images/lock.yaml has: {', '.join(profiles)}")
    elif ctx.lock.image_entry(spec.image, spec.cloud, spec.region) is None:  # unbaked entries plan
        yield SpecError(
            "image",
            f"profile {spec.image!r} has no {spec.cloud} image in {spec.region}; bake one "
            f"(stacks/Pulumi.{spec.cloud}-images.yaml) and add its id to images/lock.yaml",
        )


@check
def network_source(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    net = spec.network
    brought = {
        "aws": (net.vpc_id, net.subnet_ids, "vpc_id / subnet_ids"),
        "azure": (net.vnet_id, net.subnet_id, "vnet_id / subnet_id"),
        "alicloud": (net.vpc_id, net.vswitch_ids, "vpc_id / vswitch_ids"),
    }[spec.cloud]
    network_id, subnets, names = brought
    if net.cidr is None and not (network_id and subnets):
        yield SpecError("network", f"set network.cidr to create a network, or bring one with {names}")
    if net.cidr is not None and (network_id or subnets):
        yield SpecError("network", f"set either network.cidr or {names}, not both")
    if spec.cloud == "aws" and net.subnet_ids and len(net.subnet_ids) != len(net.zones):
        yield SpecError(
            "network.subnet_ids",
            f"list one private subnet per zone, in the order of network.zones ({len(net.zones)} zones, "
            f"{len(net.subnet_ids)} subnets)",
        )


@check
def subnets_hold_nodes(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    if spec.network.cidr is None or spec.cloud != "aws":
        return
    subnets = private_subnet_cidrs(spec.network.cidr, len(spec.network.zones))
    if subnets is None:
        yield SpecError("network.cidr", f"{spec.network.cidr} is too small to split into private subnets; use a /16")
        return
    usable = usable_addresses(subnets[0])
    demand: dict[str, int] = {}
    for group in spec.node_groups:
        primary = ctx.catalog.get(spec.cloud, group.instance_types[0])
        if primary is None:
            continue
        rdma = uses_rdma(group, ctx, spec.cloud)
        # A multi-zone group may land every node in one zone: count the worst case.
        for zone in group_zones(spec, group, rdma):
            demand[zone] = demand.get(zone, 0) + group.size.max * addresses_per_node(primary, rdma)
    for zone, needed in sorted(demand.items()):
        if needed > usable:
            yield SpecError(
                "network.cidr",
                f"the private subnet in {zone} ({subnets[0].prefixlen}-bit prefix, {usable} usable addresses) cannot "
                f"hold {needed} node addresses at max size; widen network.cidr or lower size.max",
            )


@check
def azure_ib_limits(spec: ClusterSpec, ctx: Context) -> Iterator[SpecError]:
    if spec.cloud != "azure":
        return
    ib_groups = [i for i, g in enumerate(spec.node_groups) if uses_rdma(g, ctx, spec.cloud)]
    for i in ib_groups:
        if spec.node_groups[i].size.max > AZURE_IB_MAX_NODES:
            yield SpecError(
                group_path(i, "size.max"),
                f"InfiniBand reaches only inside one scale set with singlePlacementGroup, at most "
                f"{AZURE_IB_MAX_NODES} VMs; split the group or lower size.max",
            )
    cidr = spec.network.cidr
    if ib_groups and cidr is not None and cidr.overlaps(AZURE_IB_RESERVED):
        yield SpecError(
            "network.cidr", f"{cidr} overlaps {AZURE_IB_RESERVED}, which the InfiniBand network reserves; move it"
        )


def run_checks(spec: ClusterSpec, ctx: Context) -> list[SpecError]:
    return [error for fn in CHECKS for error in fn(spec, ctx)]
