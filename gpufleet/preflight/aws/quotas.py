"""EC2 vCPU quotas per instance family, on-demand and spot apart, against what the groups may run at size.max.

EC2 counts running instances against per-family vCPU quotas in each region, on-demand and spot separately
(EC2 User Guide, "Spot Instance quotas": "managed in terms of the number of vCPUs"; the on-demand quotas the same
way). A group's worst case is size.max nodes of its largest type of the family; groups of one family add up.
Groups that launch into a reservation or a Capacity Block are left to the reservation check (it compares the
reservation's count with size.max).

Quota codes are checked against the name the API gives them: a code whose QuotaName is not one listed here is
reported as not checked rather than judged (AWS has renamed and split quotas: the EC2 User Guide's Spot table
now lists "All P4, P3 and P2 Spot Instance Requests" and "All P5 Spot Instance Requests" where it listed "All P
Spot Instance Requests"). A quota whose code no source gave is looked up by its documented name in the account's
own list (ListServiceQuotas), never by a guessed code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..findings import Finding
from .clients import AwsClients, ask

if TYPE_CHECKING:
    from gpufleet.catalog import InstanceType
    from gpufleet.clouds.backend import ResolvedCluster

CHECK = "aws-quota"
RESERVED = ("capacity-block", "reservation")


@dataclass(frozen=True)
class Quota:
    code: str | None
    """None: no source gave the code; the quota is found by name in the account's ListServiceQuotas."""
    names: tuple[str, ...]
    """The QuotaName values this code carries (EC2 User Guide quota tables; the Service Quotas console)."""


# Names: EC2 User Guide, "Spot Instance quotas" (using-spot-limits.html: "All G and VT Spot Instance Requests",
# "All P4, P3 and P2 Spot Instance Requests", earlier "All P Spot Instance Requests") and the Service Quotas console's
# EC2 list (SkyPilot's quota guide, docs/source/cloud-setup/quota.rst, quotes "Running On-Demand P instances" and
# "All P Spot Instance Requests" from it). Codes: as the Service Quotas console and public quota tooling give them
# (e.g. `aws service-quotas get-service-quota --service-code ec2 --quota-code L-DB2E81BA`); the API's QuotaName
# confirms each one before it is judged. No source gave the code of "All P5 Spot Instance Requests" (named in the
# EC2 User Guide's Spot table): it is found by that name.
G_ON_DEMAND = Quota("L-DB2E81BA", ("Running On-Demand G and VT instances",))
G_SPOT = Quota("L-3819A6DF", ("All G and VT Spot Instance Requests",))
P_ON_DEMAND = Quota("L-417A185B", ("Running On-Demand P instances",))
P2_TO_P4_SPOT = Quota("L-7212CCBC", ("All P4, P3 and P2 Spot Instance Requests", "All P Spot Instance Requests"))
P5_SPOT = Quota(None, ("All P5 Spot Instance Requests",))

_FAMILY = re.compile(r"^([a-z]+)(\d+)")


def family(instance_type: str) -> str:
    """The quota family of a type as the quota names write it: G (g and vt), P, P5, ... (the letters otherwise)."""
    found = _FAMILY.match(instance_type)
    if found is None:
        return instance_type
    letters, generation = found.group(1), int(found.group(2))
    if letters in ("g", "vt"):
        return "G"
    if letters == "p":
        return "P5" if generation >= 5 else "P"
    return letters.upper()


def quota_for(instance_type: str, spot: bool) -> Quota | None:
    """The cited quota a type counts against, None where no source gave its code."""
    kind = family(instance_type)
    if kind == "G":
        return G_SPOT if spot else G_ON_DEMAND
    if kind in ("P", "P5"):
        if not spot:
            return P_ON_DEMAND
        return P2_TO_P4_SPOT if kind == "P" else P5_SPOT
    return None


@dataclass
class Demand:
    """vCPUs the groups counting against one quota may run at size.max."""

    vcpus: int = 0
    groups: list[str] = field(default_factory=list)
    """Each group's size.max field path, in stack order."""
    parts: list[str] = field(default_factory=list)


def _largest(types: list[InstanceType], spot: bool) -> dict[tuple[Quota | None, str], InstanceType]:
    """Per quota (or uncited family), the type of the group with the most vCPUs: the worst case of its nodes."""
    best: dict[tuple[Quota | None, str], InstanceType] = {}
    for instance in types:
        quota = quota_for(instance.name, spot)
        key = (quota, "" if quota else family(instance.name))
        if key not in best or (instance.vcpu or 0) > (best[key].vcpu or 0):
            best[key] = instance
    return best


def demands(cluster: ResolvedCluster) -> tuple[dict[tuple[Quota, bool], Demand], list[Finding]]:
    """vCPUs per (quota, spot) at size.max, and the advisory findings for demand no cited quota covers."""
    needed: dict[tuple[Quota, bool], Demand] = {}
    unchecked: list[Finding] = []
    for group in cluster.groups:
        spec = group.spec
        if spec.capacity in RESERVED:
            continue
        on_demand = spec.size.max if spec.capacity == "on-demand" else min(spec.on_demand_base, spec.size.max)
        for spot, nodes in ((False, on_demand), (True, spec.size.max - on_demand)):
            if nodes <= 0:
                continue
            for (quota, kind), instance in _largest(group.known_types, spot).items():
                market = "spot" if spot else "on-demand"
                if quota is None or instance.vcpu is None:
                    why = f"no cited quota code for {kind} {market} instances" if quota is None else \
                        f"the catalog has no vCPU count for {instance.name}"
                    unchecked.append(Finding(
                        CHECK, group.path("size.max"), False,
                        f"{market} quota of {instance.name} not checked: {why}",
                        f"check the {kind} {market} vCPU quota in the Service Quotas console covers "
                        f"{nodes} x {instance.name}"))
                    continue
                demand = needed.setdefault((quota, spot), Demand())
                demand.vcpus += nodes * instance.vcpu
                demand.groups.append(group.path("size.max"))
                demand.parts.append(f"{group.name}: {nodes} x {instance.name} ({instance.vcpu} vCPUs)")
    return needed, unchecked


def by_name(clients: AwsClients, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The account's EC2 quota carrying one of `names` (ListServiceQuotas, every page), or None."""
    params: dict[str, Any] = {"ServiceCode": "ec2"}
    while True:
        answer = ask(clients, "service-quotas", "list_service_quotas", missing=("NoSuchResourceException",),
                     **params) or {}
        found = next((q for q in answer.get("Quotas", []) if q.get("QuotaName") in names), None)
        if found is not None or not answer.get("NextToken"):
            return found
        params["NextToken"] = answer["NextToken"]


def check_quota(clients: AwsClients, quota: Quota, spot: bool, demand: Demand) -> list[Finding]:
    """One quota against the demand on it: blocking when its value is below the vCPUs size.max needs."""
    if quota.code is None:
        found = by_name(clients, quota.names)
    else:
        answer = ask(clients, "service-quotas", "get_service_quota", missing=("NoSuchResourceException",),
                     ServiceCode="ec2", QuotaCode=quota.code)
        found = answer["Quota"] if answer else None
    field_path, market = demand.groups[0], "spot" if spot else "on-demand"
    if found is None:
        which = f"{quota.code} ({quota.names[0]})" if quota.code else repr(quota.names[0])
        return [Finding(CHECK, field_path, False,
                        f"Service Quotas has no EC2 quota {which} in {clients.region}; not checked",
                        f"check the {market} vCPU quota of these instances in the Service Quotas console")]
    name, value, code = found.get("QuotaName", ""), found.get("Value"), found.get("QuotaCode", quota.code)
    if name not in quota.names or value is None:
        why = f"is named {name!r} here, not {quota.names[0]!r}" if name not in quota.names else "has no value here"
        return [Finding(CHECK, field_path, False, f"quota {code} {why}; not checked",
                        f"check the {market} vCPU quota of these instances in the Service Quotas console")]
    if value >= demand.vcpus:
        return []
    groups = "; ".join(demand.parts)
    return [Finding(
        CHECK, field_path, True,
        f"{name} ({code}) is {value:,.0f} vCPUs in {clients.region}; size.max needs {demand.vcpus:,} "
        f"({groups}), before what already runs in the account",
        f"request {demand.vcpus:,} vCPUs: aws service-quotas request-service-quota-increase --region "
        f"{clients.region} --service-code ec2 --quota-code {code} --desired-value {demand.vcpus}; "
        "or lower size.max")]
