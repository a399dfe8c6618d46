"""Azure Managed Lustre sizes, read from the catalog's published limits: the throughput tiers with their
capacity range and step, the SKU name of a tier, and the subnet a file system of a size needs. Shared by the
stack checks (before any resource) and the file system component."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.catalog import Catalog

SKU_PREFIX = "AMLFS-Durable-Premium-"  # the SKU names carry the tier's MB/s per TiB
_TIER = re.compile(r"^(\d+):(\d+)-(\d+)/(\d+)$")


@dataclass(frozen=True)
class Tier:
    """One throughput tier: MB/s per TiB, and the capacities (TiB) it sells."""

    mb_per_tib: int
    min_tib: int
    max_tib: int
    step_tib: int

    @property
    def sku(self) -> str:
        return f"{SKU_PREFIX}{self.mb_per_tib}"

    def sells(self, tib: float) -> bool:
        return tib == int(tib) and self.min_tib <= tib <= self.max_tib and int(tib) % self.step_tib == 0

    def describe(self) -> str:
        return f"{self.min_tib} to {self.max_tib} TiB in steps of {self.step_tib}"


def tiers(catalog: Catalog) -> dict[int, Tier]:
    """The tiers by MB/s per TiB, lowest first."""
    found = {}
    for part in str(catalog.limit("azure", "amlfs_tiers")).split(","):
        match = _TIER.match(part.strip())
        if match is None:
            raise ValueError(f"catalog azure amlfs_tiers: {part!r} is not MBPS:MIN-MAX/STEP")
        tier = Tier(*map(int, match.groups()))
        found[tier.mb_per_tib] = tier
    return dict(sorted(found.items()))


def tier_of(catalog: Catalog, throughput_mb_per_tib: int | None) -> Tier | None:
    """The tier a stack asks for (null: the lowest), None when Azure offers no such tier."""
    offered = tiers(catalog)
    if throughput_mb_per_tib is None:
        return next(iter(offered.values()))
    return offered.get(throughput_mb_per_tib)


def subnet_prefixlen(catalog: Catalog, tib: float) -> int | None:
    """The smallest subnet (prefix length) Azure publishes for a file system of `tib`; None above the table."""
    for part in str(catalog.limit("azure", "amlfs_subnet_prefix_by_tib")).split(","):
        most, prefixlen = part.split(":")
        if tib <= int(most):
            return int(prefixlen)
    return None
