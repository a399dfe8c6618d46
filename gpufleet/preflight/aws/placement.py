"""Where the groups land: each type offered in each of its zones (a Slurm head node's type in its zone too), and the
reservations and Capacity Blocks they launch into.

DescribeInstanceTypeOfferings with LocationType availability-zone lists, per type, the zones of the region that
offer it (EC2 API reference, DescribeInstanceTypeOfferings: filters `instance-type`, `location`).
DescribeCapacityReservations gives a reservation's InstanceType, AvailabilityZone, TotalInstanceCount, State,
StartDate, EndDate and ReservationType (`default` | `capacity-block`) (EC2 API reference, CapacityReservation);
an id that does not exist is InvalidCapacityReservationId.NotFound ("Error codes for the Amazon EC2 API").
A reservation made in a cluster placement group carries PlacementGroupArn (arn:aws:ec2:REGION:ACCOUNT:placement-
group/NAME) and serves only launches into that group; gpufleet launches reserved capacity without one, so such a
reservation blocks (aws-parallelcluster cli/src/pcluster/validators/ec2_validators.py,
PlacementGroupCapacityReservationValidator._validate_no_pg: "no open or targeted ODCRs ... and no placement group").
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..findings import Finding
from .clients import AwsClients, ask

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

OFFERING = "aws-zone-offering"
RESERVATION = "aws-reservation"


def zone_field(cluster: ResolvedCluster, group: ResolvedGroup, zone: str) -> str:
    """The stack field that chose `zone` for the group: its own `zone`, else its place in network.zones."""
    if group.spec.zone:
        return group.path("zone")
    return f"network.zones[{list(cluster.spec.network.zones).index(zone)}]"


def offered_zones(clients: AwsClients, types: list[str]) -> dict[str, set[str]]:
    """Per instance type, the zones of the region that offer it."""
    zones: dict[str, set[str]] = {name: set() for name in types}
    params: dict[str, Any] = {
        "LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": sorted(types)}],
    }
    while True:
        answer = ask(clients, "ec2", "describe_instance_type_offerings", **params) or {}
        for offer in answer.get("InstanceTypeOfferings", []):
            zones.setdefault(offer["InstanceType"], set()).add(offer["Location"])
        if not answer.get("NextToken"):
            return zones
        params["NextToken"] = answer["NextToken"]


def check_offerings(clients: AwsClients, cluster: ResolvedCluster) -> list[Finding]:
    """Each group's types in each of its zones: the primary missing blocks (the group cannot launch there as
    planned); a fallback missing is advisory (the group launches its other types there). A Slurm head node's type
    missing in its zone blocks (one machine, no other type to fall back on)."""
    head = head_node_placement(cluster)
    types = {name for group in cluster.groups for name in group.spec.instance_types}
    if head is not None:
        types.add(head[0])
    if not types:
        return []
    offered = offered_zones(clients, sorted(types))
    findings = _head_node_offered(head, offered, cluster.spec.region) if head else []
    for group in cluster.groups:
        for index, name in enumerate(group.spec.instance_types):
            for zone in group.zones:
                if zone in offered.get(name, set()):
                    continue
                elsewhere = ", ".join(sorted(offered.get(name, set()))) or f"no zone of {cluster.spec.region}"
                primary = index == 0
                if group.rdma and primary:
                    findings.append(Finding(
                        OFFERING, zone_field(cluster, group, zone), True,
                        f"{name} is not offered in {zone}, the one zone of RDMA group {group.name} (offered in: "
                        f"{elsewhere})",
                        f"move the group to a zone that offers {name}, or pick a type offered in {zone}"))
                    continue
                findings.append(Finding(
                    OFFERING, group.path(f"instance_types[{index}]"), primary,
                    f"{name} is not offered in {zone} (offered in: {elsewhere})",
                    f"list only zones that offer {name} for group {group.name}, or choose another type"
                    + ("" if primary else "; the group launches its other types there meanwhile")))
    return findings


def head_node_placement(cluster: ResolvedCluster) -> tuple[str, str] | None:
    """A Slurm cluster's head node: its type and zone; None without one."""
    found, zone = cluster.head_node_type, cluster.head_node_zone
    return (found[0], zone) if found is not None and zone is not None else None


def _head_node_offered(head: tuple[str, str], offered: dict[str, set[str]], region: str) -> list[Finding]:
    name, zone = head
    if zone in offered.get(name, set()):
        return []
    elsewhere = ", ".join(sorted(offered.get(name, set()))) or f"no zone of {region}"
    return [Finding(OFFERING, "scheduler.head_node.instance_type", True,
                    f"{name}, the Slurm head node's type, is not offered in {zone} (offered in: {elsewhere})",
                    f"choose a head node type offered in {zone}, or set scheduler.head_node.zone to one of "
                    f"network.zones that offers {name}")]


def check_reservation(clients: AwsClients, cluster: ResolvedCluster, group: ResolvedGroup,
                      now: datetime | None = None) -> list[Finding]:
    """The group's reservation exists, is for its primary type, in its zone, holds size.max and is usable now."""
    reservation_id, capacity = group.spec.reservation_id, group.spec.capacity
    field_path = group.path("reservation_id")
    answer = ask(clients, "ec2", "describe_capacity_reservations", missing=("InvalidCapacityReservationId.",),
                 CapacityReservationIds=[reservation_id])
    found = (answer or {}).get("CapacityReservations", [])
    if not found:
        return [Finding(RESERVATION, field_path, True,
                        f"capacity reservation {reservation_id} does not exist in {clients.region} for this account",
                        "give the id of a reservation of this account and region (aws ec2 describe-capacity-"
                        "reservations), or change the group's capacity")]
    held = found[0]
    problems: list[tuple[str, str, str]] = []  # (field, what the account says, fix)
    kind = held.get("ReservationType", "default")
    if (capacity == "capacity-block") != (kind == "capacity-block"):
        problems.append((group.path("capacity"), f"{reservation_id} is a {kind} reservation but the group's "
                         f"capacity is {capacity}", "set capacity: capacity-block for a Capacity Block, "
                         "reservation for an On-Demand Capacity Reservation"))
    primary = group.spec.instance_types[0]
    if held.get("InstanceType") != primary:
        problems.append((group.path("instance_types[0]"), f"{reservation_id} reserves {held.get('InstanceType')}, "
                         f"not {primary}", f"make {held.get('InstanceType')} the group's first type, or give the "
                         "reservation of this type"))
    zone = held.get("AvailabilityZone")
    if zone not in group.zones:
        target = zone_field(cluster, group, group.zones[0]) if group.zones else "network.zones"
        problems.append((target, f"{reservation_id} is in {zone}; the group runs in {', '.join(group.zones)}",
                         f"place the group in {zone}"))
    placed_in = held.get("PlacementGroupArn")
    if placed_in:
        problems.append((field_path, f"{reservation_id} is reserved inside cluster placement group "
                         f"{placed_in.rsplit('/', 1)[-1]} ({placed_in}): it serves only launches into that group, and "
                         "gpufleet launches reserved capacity without a placement group",
                         "give a reservation made outside a placement group (aws ec2 create-capacity-reservation "
                         "without --placement-group-arn)"))
    total = int(held.get("TotalInstanceCount", 0))
    if total < group.spec.size.max:
        problems.append((group.path("size.max"), f"{reservation_id} holds {total} instances; size.max is "
                         f"{group.spec.size.max}", f"lower size.max to {total}, or extend the reservation"))
    problems += _window(held, reservation_id, field_path, now or datetime.now(timezone.utc))
    return [Finding(RESERVATION, where, True, says, fix) for where, says, fix in problems]


def _window(held: dict[str, Any], reservation_id: str, field_path: str, now: datetime) -> list[tuple[str, str, str]]:
    state = held.get("State", "")
    start, end = held.get("StartDate"), held.get("EndDate")
    if state in ("expired", "cancelled", "failed", "payment-failed", "unsupported") or (end is not None and end <= now):
        return [(field_path, f"{reservation_id} is {state or 'over'}" + (f" (ended {end:%Y-%m-%d %H:%M} UTC)" if end
                 else ""), "buy or create a new reservation and give its id")]
    if state != "active" or (start is not None and start > now):
        when = f" until {start:%Y-%m-%d %H:%M} UTC" if start is not None else ""
        return [(field_path, f"{reservation_id} is {state or 'not active'}{when}: nodes cannot launch into it yet",
                 "run `pulumi up` once the reservation is active")]
    return []
