"""What the account may launch: vCPU quotas, each type offered in each chosen zone (a Slurm head node's in its zone),
ERIs per type.

API references (field names as the answers write them; response shapes also in Alibaba's OpenAPI metadata for
Ecs 2014-05-26 and quotas 2020-05-10, mirrored in dew-serverless/acs-sdk-php data/<product>/<version>/api-docs.json):
- ECS DescribeAccountAttributes (alibabacloud.com/help/en/ecs/developer-reference/
  api-ecs-2014-05-26-describeaccountattributes): AttributeName max-/used-postpaid-instance-vcpu-count,
  max-/used-spot-instance-vcpu-count, max-elastic-network-interfaces, real-name-authentication (yes | none |
  unnecessary; "you can create ECS instances in regions in mainland China only after real-name verification").
- Quota Center ListProductQuotas (alibabacloud.com/help/en/quota-center/developer-reference/
  api-quotas-2020-05-10-listproductquotas): ProductCode ecs-spec, QuotaActionCode the instance type ("ECS quotas by
  instance type"); each quota's Dimensions regionId, zoneId, chargeType (PostPaid), networkType, resourceType, its
  TotalQuota and TotalUsage in QuotaUnit "AMOUNT". The reference does not say whether AMOUNT counts instances or vCPUs,
  and no reference read names the per-family GPU/vCPU quota ids the ECS Limits page mentions: so less left than the
  group's nodes is blocking (short either way), less than its vCPUs is advisory, no per-type row is advisory.
- ECS DescribeAvailableResource (.../api-ecs-2014-05-26-describeavailableresource): DestinationResource
  InstanceType, InstanceChargeType PostPaid, SpotStrategy NoSpot | SpotAsPriceGo | SpotWithPriceLimit; without
  ZoneId it answers every zone of the region. Zone and resource Status Available | SoldOut; StatusCategory WithStock |
  ClosedWithStock | WithoutStock (sold out, replenished) | ClosedWithoutStock (sold out, not replenished).
- ECS DescribeInstanceTypes (.../api-ecs-2014-05-26-describeinstancetypes): InstanceTypes.InstanceType[].EriQuantity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from alibabacloud_ecs20140526 import models as ecs
from alibabacloud_quotas20200510 import models as quotas

from components.clouds.alicloud.nodegroup import spot_strategy

from ..findings import Finding

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

    from .clients import AlicloudClients

Check = Callable[[], list[Finding]]

ATTRIBUTES = ("max-postpaid-instance-vcpu-count", "used-postpaid-instance-vcpu-count", "max-spot-instance-vcpu-count",
              "used-spot-instance-vcpu-count", "max-elastic-network-interfaces", "real-name-authentication")
SOLD_OUT = ("SoldOut",)
NOT_REPLENISHED = "ClosedWithoutStock"
QUOTA_CENTER = "Quota Center (ECS quotas by instance type)"


def nodes_by_billing(group: ResolvedGroup) -> tuple[int, int]:
    """(pay-as-you-go, spot) nodes at size.max: spot and mixed groups keep on_demand_base on pay-as-you-go."""
    size = group.spec.size.max
    if not group.spec.spot:
        return size, 0
    base = min(group.spec.on_demand_base, size)
    return base, size - base


def node_vcpus(group: ResolvedGroup) -> int | None:
    """vCPUs of the group's largest type (any of them may launch); None when the catalog lacks one's count."""
    counts = [t.vcpu for t in group.known_types]
    return max(counts) if counts and None not in counts and len(counts) == len(group.types) else None  # type: ignore


def checks(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Check]:
    found: list[Check] = [lambda: account_quotas(cluster, clients)]
    for group in cluster.groups:
        if group.primary is None:
            continue
        found.append(lambda group=group: type_quota(group, clients))
        found.append(lambda group=group: zone_offering(group, clients))
        if group.interfaces and group.fabric == "erdma":
            found.append(lambda group=group: eri_count(group, clients))
    if cluster.head_node_type is not None:
        found.append(lambda: head_node_offering(cluster, clients))
    return found


def _attributes(cluster: ResolvedCluster, clients: AlicloudClients) -> dict[str, str]:
    body = clients.call("ecs", "DescribeAccountAttributes", ecs.DescribeAccountAttributesRequest(
        region_id=cluster.spec.region, attribute_name=list(ATTRIBUTES))) or {}
    values: dict[str, str] = {}
    for item in body.get("AccountAttributeItems", {}).get("AccountAttributeItem", []):
        items = item.get("AttributeValues", {}).get("ValueItem", [])
        regional = [v for v in items if not v.get("ZoneId")] or items  # a zone's item only where none is regional
        if regional:
            values[item.get("AttributeName", "")] = str(regional[0].get("Value", ""))
    return values


def account_quotas(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Finding]:
    """The region's vCPU quotas by billing method against every group at size.max; ERIs against the ENI quota; the
    real-name verification mainland China regions need."""
    values = _attributes(cluster, clients)
    region = cluster.spec.region
    findings: list[Finding] = []
    needs: dict[str, list[tuple[ResolvedGroup, int]]] = {"postpaid": [], "spot": []}
    enis = 0
    for group in cluster.groups:
        vcpus = node_vcpus(group)
        if vcpus is None:
            continue
        on_demand, spot = nodes_by_billing(group)
        needs["postpaid"].append((group, on_demand * vcpus))
        needs["spot"].append((group, spot * vcpus))
        enis += group.spec.size.max * group.interfaces if group.fabric == "erdma" else 0
    for billing, label in (("postpaid", "pay-as-you-go"), ("spot", "spot (preemptible)")):
        need = sum(n for _, n in needs[billing])
        most, used = _number(values.get(f"max-{billing}-instance-vcpu-count")), _number(
            values.get(f"used-{billing}-instance-vcpu-count"))
        if need == 0 or most is None:
            continue
        left = most - (used or 0)
        if need > left:
            group = max(needs[billing], key=lambda pair: pair[1])[0]
            shares = ", ".join(f"{g.name} {n:,}" for g, n in needs[billing] if n)
            findings.append(Finding(
                "alicloud-quota", group.path("size.max"), True,
                f"{region} allows {most:,} {label} vCPUs and {used or 0:,} are in use, {left:,} left; the node groups "
                f"at size.max need {need:,} ({shares}) (DescribeAccountAttributes max-{billing}-instance-vcpu-count)",
                f"request a higher {label} vCPU quota in Quota Center (ECS, {region}), or lower size.max",
            ))
    most_enis = _number(values.get("max-elastic-network-interfaces"))
    if enis and most_enis is not None and enis > most_enis:
        group = max((g for g in cluster.groups if g.fabric == "erdma" and g.interfaces), key=lambda g: g.spec.size.max)
        findings.append(Finding(
            "alicloud-quota", group.path("size.max"), True,
            f"{region} allows {most_enis:,} elastic network interfaces; the eRDMA groups' ERIs at size.max are "
            f"{enis:,} (DescribeAccountAttributes max-elastic-network-interfaces)",
            "request more elastic network interfaces in Quota Center (ECS), or lower size.max",
        ))
    if region.startswith("cn-") and values.get("real-name-authentication") == "none":
        findings.append(Finding(
            "alicloud-account", "region", True,
            f"the account has not completed real-name verification, which ECS requires in mainland China ({region})",
            "complete real-name verification in the Alibaba Cloud account center, or use a region outside the mainland",
        ))
    return findings


def _number(value: str | None) -> int | None:
    try:
        return int(float(value)) if value not in (None, "") else None
    except ValueError:
        return None


def type_quota(group: ResolvedGroup, clients: AlicloudClients) -> list[Finding]:
    """Quota Center's ecs-spec quota of the primary type in the group's zones, pay-as-you-go nodes only (no spot
    dimension is documented)."""
    primary = group.spec.instance_types[0]
    body = clients.call("quotas", "ListProductQuotas", quotas.ListProductQuotasRequest(
        product_code="ecs-spec", quota_action_code=primary, max_results=100,
        dimensions=[quotas.ListProductQuotasRequestDimensions(key="regionId", value=clients.region)])) or {}
    rows = [q for q in body.get("Quotas", []) if q.get("QuotaActionCode") == primary
            and (q.get("Dimensions") or {}).get("chargeType", "PostPaid") == "PostPaid"
            and (q.get("Dimensions") or {}).get("zoneId") in (None, *group.zones)]
    on_demand, spot = nodes_by_billing(group)
    field = group.path("instance_types[0]")
    if not rows:
        return [Finding(
            "alicloud-quota", field, False,
            f"{QUOTA_CENTER} lists no quota for {primary} in {', '.join(group.zones) or clients.region}: the type's "
            "own quota was not checked (only the region's vCPU quotas were); spot nodes have no per-type quota to read",
            f"look up {primary} under Quota Center > ECS quotas by instance type before a large deploy",
        )]
    if on_demand == 0:
        return []
    left = sum(float(q.get("TotalQuota") or 0) - float(q.get("TotalUsage") or 0) for q in rows)
    zones = ", ".join(sorted({(q.get("Dimensions") or {}).get("zoneId", clients.region) for q in rows}))
    vcpus = node_vcpus(group) or 1
    says = (f"{QUOTA_CENTER} leaves {left:g} (unit {rows[0].get('QuotaUnit', '?')}) of {primary} pay-as-you-go in "
            f"{zones}; size.max needs {on_demand} pay-as-you-go nodes ({on_demand * vcpus:,} vCPUs)")
    fix = f"request more {primary} in Quota Center (ECS quotas by instance type, {zones}), or lower size.max"
    if left < on_demand:
        return [Finding("alicloud-quota", group.path("size.max"), True, says, fix)]
    if left < on_demand * vcpus:
        return [Finding("alicloud-quota", group.path("size.max"), False,
                        says + "; enough if the unit counts instances, short if it counts vCPUs", fix)]
    return []


def offers(clients: AlicloudClients, instance_type: str, strategy: str) -> dict[str, tuple[str, str]]:
    """Zone -> (Status, StatusCategory) of the type in every zone of the region that lists it."""
    body = clients.call("ecs", "DescribeAvailableResource", ecs.DescribeAvailableResourceRequest(
        region_id=clients.region, destination_resource="InstanceType", instance_type=instance_type,
        instance_charge_type="PostPaid", spot_strategy=strategy)) or {}
    zones: dict[str, tuple[str, str]] = {}
    for zone in body.get("AvailableZones", {}).get("AvailableZone", []):
        for resource in zone.get("AvailableResources", {}).get("AvailableResource", []):
            if resource.get("Type") != "InstanceType":
                continue
            for offer in resource.get("SupportedResources", {}).get("SupportedResource", []):
                if offer.get("Value") == instance_type:
                    zones[zone.get("ZoneId", "")] = (offer.get("Status", ""), offer.get("StatusCategory", ""))
    return zones


def zone_offering(group: ResolvedGroup, clients: AlicloudClients) -> list[Finding]:
    """Every type of the group in every zone it uses, for the billing it launches with; the primary missing is
    blocking, a fallback missing advisory (the group still launches its primary)."""
    on_demand, spot = nodes_by_billing(group)
    strategies = ([spot_strategy(group.spec)] if spot else []) + (["NoSpot"] if on_demand else [])
    findings: list[Finding] = []
    rdma = " (eRDMA groups use this one zone)" if group.rdma else ""
    for index, name in enumerate(group.spec.instance_types):
        field = group.path(f"instance_types[{index}]")
        for strategy in strategies:
            offered = offers(clients, name, strategy)
            billing = "pay-as-you-go" if strategy == "NoSpot" else f"spot ({strategy})"
            elsewhere = ", ".join(sorted(z for z, (status, _) in offered.items() if status == "Available")) or "none"
            for zone in group.zones:
                if zone not in offered:
                    findings.append(Finding(
                        "alicloud-zone-offering", field, index == 0,
                        f"{name} is not offered {billing} in {zone}{rdma}; zones of {clients.region} offering it: "
                        f"{elsewhere} (DescribeAvailableResource)",
                        "choose zones that offer it (network.zones, or the group's zone), or another instance type",
                    ))
                    continue
                status, category = offered[zone]
                if category == NOT_REPLENISHED or status in SOLD_OUT:
                    findings.append(Finding(
                        "alicloud-zone-offering", field, index == 0 and category == NOT_REPLENISHED,
                        f"{name} {billing} in {zone}{rdma} is {status} ({category}): "
                        + ("sold out and not replenished" if category == NOT_REPLENISHED
                           else "no stock right now, to be replenished"),
                        f"choose a zone with stock ({elsewhere}), add fallback types, or try again later",
                    ))
    return findings


def head_node_offering(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Finding]:
    """A Slurm cluster's head node type, pay-as-you-go in its zone: one machine with no type to fall back on, so
    missing or sold out without replenishment blocks; sold out for now is advisory."""
    head, zone = cluster.head_node_type, cluster.head_node_zone
    if head is None or zone is None:
        return []
    name, field = head[0], "scheduler.head_node.instance_type"
    offered = offers(clients, name, "NoSpot")
    elsewhere = ", ".join(sorted(z for z, (status, _) in offered.items() if status == "Available")) or "none"
    if zone not in offered:
        return [Finding("alicloud-zone-offering", field, True,
                        f"{name}, the Slurm head node's type, is not offered pay-as-you-go in {zone}; zones of "
                        f"{clients.region} offering it: {elsewhere} (DescribeAvailableResource)",
                        "choose a head node type offered in its zone, or set scheduler.head_node.zone to one of "
                        "network.zones that offers it")]
    status, category = offered[zone]
    if category == NOT_REPLENISHED or status in SOLD_OUT:
        return [Finding("alicloud-zone-offering", field, category == NOT_REPLENISHED,
                        f"{name}, the Slurm head node's type, pay-as-you-go in {zone} is {status} ({category}): "
                        + ("sold out and not replenished" if category == NOT_REPLENISHED
                           else "no stock right now, to be replenished"),
                        f"choose another head node type, a zone with stock ({elsewhere}), or try again later")]
    return []


def eri_count(group: ResolvedGroup, clients: AlicloudClients) -> list[Finding]:
    """The ERIs the scaling configuration attaches (the catalog's count) against the type's EriQuantity."""
    name = group.spec.instance_types[0]
    body = clients.call("ecs", "DescribeInstanceTypes", ecs.DescribeInstanceTypesRequest(instance_types=[name])) or {}
    rows: list[dict[str, Any]] = [t for t in body.get("InstanceTypes", {}).get("InstanceType", [])
                                  if t.get("InstanceTypeId") == name]
    if not rows or rows[0].get("EriQuantity") is None:
        return [Finding("alicloud-eri", group.path("instance_types[0]"), False,
                        f"DescribeInstanceTypes gives no EriQuantity for {name}; the {group.interfaces} ERIs per node "
                        "were not checked", "confirm the type's ERI count before the first deploy")]
    most = int(rows[0]["EriQuantity"])
    if most >= group.interfaces:
        return []
    return [Finding(
        "alicloud-eri", group.path("rdma"), True,
        f"{name} takes {most} ERIs (DescribeInstanceTypes EriQuantity); the group attaches {group.interfaces} per node",
        "use a type with that many ERIs, or rdma: off",
    )]
