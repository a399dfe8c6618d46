"""VM sizes the subscription may run where the stack puts them, and the vCPU quota they take at size.max.

Facts read from Resource Skus - List (GET /subscriptions/{id}/providers/Microsoft.Compute/skus, $filter location;
azure-rest-api-specs Microsoft.Compute/Skus/stable/2021-07-01/skus.json): per size its `family`, capabilities
(`vCPUs`, `LowPriorityCapable`, `EncryptionAtHostSupported`, `RdmaEnabled`), `locationInfo[].zones`, and
`restrictions[]` of type Location or Zone with `restrictionInfo.locations/zones` and reasonCode
NotAvailableForSubscription or QuotaId. From Usage - List (GET .../providers/Microsoft.Compute/locations/{location}/
usages; ComputeRP Usage_List) the vCPU quotas: per family under the SKU's `family` name, `cores` (Total Regional
vCPUs) and `lowPriorityCores` (Total Regional Low-priority vCPUs), each with `limit` and `currentValue`. Regular VMs
count against their family and the regional total; Spot VMs against the low-priority quota alone, across families
(azure-docs quotas/spot-quota.md: "Spot vCPU quotas apply to spot virtual machines (VMs) across all VM families").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..concurrent import Check
from ..findings import Finding
from .clients import AzureClients, Memo, ask

REGIONAL = "cores"
SPOT = "lowPriorityCores"
QUOTA_FIX = ("request a limit of at least {limit:,} vCPUs for {quota} in {region} (Azure portal: Quotas > Compute), "
             "or lower size.max")


@dataclass(frozen=True)
class Placement:
    """VMs the stack asks Azure for: `count` of one size in `zones` (empty: regional)."""

    size: str
    count: int
    spot: bool
    zones: tuple[str, ...]
    size_field: str
    """The field naming the size (node_groups[0].instance_types[0], build_vm_size)."""
    count_field: str
    """The field the count comes from (node_groups[0].size.max)."""
    zone_field: str
    capacity_field: str
    rdma_field: str | None
    """Set where the group runs InfiniBand: the size must be RDMA-capable and its zone one."""
    label: str


@dataclass(frozen=True)
class Sku:
    name: str
    family: str | None
    capabilities: dict[str, str]
    zones: frozenset[str]
    region_restriction: str | None
    """reasonCode of a Location restriction in the region (NotAvailableForSubscription, QuotaId); None: usable."""
    restricted_zones: frozenset[str]

    @property
    def vcpus(self) -> int | None:
        value = self.capabilities.get("vcpus")
        return int(value) if value and value.isdigit() else None

    def says_false(self, capability: str) -> bool:
        """The size states it lacks the capability (absent: unknown, not reported)."""
        return self.capabilities.get(capability.lower(), "").lower() == "false"


@dataclass(frozen=True)
class Quota:
    name: str
    shown: str
    limit: int
    used: int

    @property
    def free(self) -> int:
        return self.limit - self.used


def _sku(raw: object, region: str) -> Sku:
    region = region.lower()
    zones = frozenset(
        zone for info in getattr(raw, "location_info", None) or []
        if (info.location or "").lower() == region for zone in info.zones or []
    )
    blocked: str | None = None
    restricted: set[str] = set()
    for restriction in getattr(raw, "restrictions", None) or []:
        info = restriction.restriction_info
        # `values` is values_property: the SDK's models are mappings, whose .values() is the dict method.
        listed = [*(restriction.values_property or []), *((info.locations if info else None) or [])]
        places = {p.lower() for p in listed}
        if region not in places:
            continue
        if restriction.type == "Location":
            blocked = str(restriction.reason_code or "restricted")
        elif restriction.type == "Zone":
            restricted.update((info.zones if info else None) or [])
    return Sku(
        name=str(raw.name),  # type: ignore[attr-defined]
        family=getattr(raw, "family", None),
        capabilities={(c.name or "").lower(): str(c.value) for c in getattr(raw, "capabilities", None) or []},
        zones=zones,
        region_restriction=blocked,
        restricted_zones=frozenset(restricted),
    )


class Compute:
    """The two region-wide lists, each fetched once for all checks."""

    def __init__(self, clients: AzureClients, memo: Memo) -> None:
        self.clients, self.memo = clients, memo

    def skus(self, region: str) -> dict[str, Sku]:
        def fetch() -> dict[str, Sku]:
            listed = ask(self.clients, f"the VM sizes of {region} (Resource Skus - List)", lambda: list(
                self.clients.compute.resource_skus.list(filter=f"location eq '{region}'")))
            return {s.name.lower(): _sku(s, region) for s in listed if s.resource_type == "virtualMachines" and s.name}

        return self.memo.get(("skus", region), fetch)

    def quotas(self, region: str) -> dict[str, Quota]:
        def fetch() -> dict[str, Quota]:
            listed = ask(self.clients, f"the compute quotas of {region} (Usage - List)",
                         lambda: list(self.clients.compute.usage.list(region)))
            return {
                u.name.value.lower(): Quota(u.name.value, u.name.localized_value or u.name.value, int(u.limit),
                                            int(u.current_value))
                for u in listed if u.name is not None and u.name.value
            }

        return self.memo.get(("quotas", region), fetch)


def offering_checks(
    compute: Compute, region: str, placements: list[Placement], encryption_at_host: bool
) -> list[Check]:
    return [lambda p=p: list(_offered(compute, region, p, encryption_at_host)) for p in placements]


def _offered(compute: Compute, region: str, p: Placement, encryption_at_host: bool) -> Iterator[Finding]:
    sku = compute.skus(region).get(p.size.lower())
    subscription = compute.clients.subscription_id
    other_regions = f"`az vm list-skus --location {region} --size {p.size} --all --output table` shows where it is"
    if sku is None:
        yield Finding("azure-offering", p.size_field, True,
                      f"Azure lists no VM size {p.size} in {region} for subscription {subscription} (Resource SKUs)",
                      f"choose a size offered in {region}, or another region; {other_regions}")
        return
    if sku.region_restriction is not None:
        why = ("the subscription's offer type excludes it (QuotaId)" if sku.region_restriction == "QuotaId"
               else "it is not available for this subscription (NotAvailableForSubscription)")
        yield Finding("azure-offering", p.size_field, True, f"{p.size} is restricted in {region}: {why}",
                      f"request access to {p.size} in {region} through an Azure support request (region access), "
                      "or choose another size or region")
        return
    usable = sorted(sku.zones - sku.restricted_zones)
    for zone in p.zones:
        if zone in usable:
            continue
        restricted = " (restricted for this subscription)" if zone in sku.restricted_zones else ""
        fabric = "; an InfiniBand group needs one zone for its whole fabric" if p.rdma_field else ""
        yield Finding(
            "azure-zone-offering", p.zone_field, True,
            f"{p.size} is offered in zones {', '.join(usable) or 'none'} of {region} for this subscription, "
            f"not zone {zone}{restricted}",
            f"use {'one of zones ' + ', '.join(usable) if usable else 'no zone (a regional scale set)'}{fabric}",
        )
    if p.spot and sku.says_false("LowPriorityCapable"):
        yield Finding("azure-offering", p.capacity_field, True, f"{p.size} does not run as Spot (LowPriorityCapable "
                      "False)", "set capacity: on-demand, or choose a Spot-capable size")
    if encryption_at_host and sku.says_false("EncryptionAtHostSupported"):
        yield Finding("azure-offering", "storage.encryption_at_host", True,
                      f"{p.size} does not support encryption at host (EncryptionAtHostSupported False)",
                      "set storage.encryption_at_host: false, or choose a size that supports it")
    if p.rdma_field and sku.says_false("RdmaEnabled"):
        yield Finding("azure-offering", p.rdma_field, True,
                      f"{p.size} has no InfiniBand in {region} (RdmaEnabled False)",
                      "set rdma: off, or choose an InfiniBand size (ND/HB/HX series with 'r')")


@dataclass
class _Need:
    quota: str
    vcpus: int = 0
    field: str = ""
    parts: list[str] | None = None


def quota_check(compute: Compute, region: str, placements: list[Placement]) -> Check:
    return lambda: list(_quota(compute, region, placements))


def _quota(compute: Compute, region: str, placements: list[Placement]) -> Iterator[Finding]:
    skus = compute.skus(region)
    needs: dict[str, _Need] = {}
    for p in placements:
        sku = skus.get(p.size.lower())
        if sku is None or sku.vcpus is None or sku.region_restriction is not None:
            continue  # the offering check reports it; there is no quota to read for it
        vcpus = p.count * sku.vcpus
        part = f"{p.label}: {p.count} x {p.size} at {sku.vcpus} vCPUs"
        names = [SPOT] if p.spot else [sku.family or f"(no family for {p.size})", REGIONAL]
        for name in names:
            need = needs.setdefault(name.lower(), _Need(name, field=p.count_field, parts=[]))
            need.vcpus += vcpus
            need.parts.append(part)  # type: ignore[union-attr]
    if not needs:
        return
    quotas = compute.quotas(region)
    for key, need in needs.items():
        quota = quotas.get(key)
        parts = "; ".join(need.parts or [])
        if quota is None:
            yield Finding("azure-quota", need.field, True,
                          f"the compute quotas of {region} list no {need.quota} quota, so none of its "
                          f"{need.vcpus} vCPUs can start ({parts})",
                          QUOTA_FIX.format(limit=need.vcpus, quota=need.quota, region=region))
        elif need.vcpus > quota.free:
            yield Finding(
                "azure-quota", need.field, True,
                f"{quota.shown} ({quota.name}) in {region}: limit {quota.limit:,}, {quota.used:,} in use, "
                f"{quota.free:,} free (in use counts nodes this stack already runs); size.max needs "
                f"{need.vcpus:,} ({parts})",
                QUOTA_FIX.format(limit=quota.used + need.vcpus, quota=quota.shown, region=region),
            )
