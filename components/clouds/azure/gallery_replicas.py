"""How an image version is spread in each region it serves: replicas enough for the VMs a scale-out creates at
once, on zone-redundant storage where the region has availability zones. Read from the catalog's published
Compute Gallery limits; shared by the image stack's check (before any resource) and the image pipeline."""

from __future__ import annotations

import math

from gpufleet.catalog import Catalog

ZONE_REDUNDANT = "Standard_ZRS"
LOCALLY_REDUNDANT = "Standard_LRS"  # the service's default; the only choice where a region has no zones


def replicas_per_region(concurrent_vms: int, catalog: Catalog) -> int:
    """One replica per `gallery_vms_per_replica` VMs created at once, never fewer than the production minimum;
    at most the per-region maximum."""
    per_replica = int(catalog.limit("azure", "gallery_vms_per_replica"))
    wanted = max(math.ceil(concurrent_vms / per_replica), int(catalog.limit("azure", "gallery_min_replicas")))
    return min(wanted, int(catalog.limit("azure", "gallery_region_replicas_max")))


def zone_regions(catalog: Catalog) -> frozenset[str]:
    """Regions with availability zones: there the replicas go on Standard_ZRS (a zone outage leaves them
    readable); Standard_ZRS is offered only there."""
    return frozenset(name.strip() for name in str(catalog.limit("azure", "zone_regions")).split(","))
