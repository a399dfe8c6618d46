"""The Azure image version is spread for a scale-out: replicas per region from `max_concurrent_nodes` (one per 20
VMs created at once, at least 3, at most 50: Azure Compute Gallery best practices), zone-redundant storage where
the region has availability zones (catalog data), refused past the gallery's limits with exit 2."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import SHIPPED_STACKS
from image_stacks import images_stack, refused
from test_azure_image_pipeline import TEMPLATE, args, build, one

from components.clouds.azure.gallery_replicas import replicas_per_region, zone_regions
from gpufleet.catalog import load_catalog
from gpufleet.clouds.azure.stack_model import AzureImagesSpec
from gpufleet.plan.planner import plan_stack


def target_regions(path: Path) -> list[dict]:
    plan = plan_stack(path, SHIPPED_STACKS)
    assert plan.exit_code == 0, plan.policies["violations"]
    template = next(r for r in plan.resources if r.type == TEMPLATE)
    (distribution,) = template.inputs["distribute"]
    return distribution["targetRegions"]


def test_the_shipped_stack_keeps_replicas_for_the_largest_ib_scale_set_on_zone_redundant_storage() -> None:
    catalog = load_catalog()
    # The default is the largest InfiniBand scale set; 100 VMs at once want ceil(100 / 20) = 5 replicas.
    default = AzureImagesSpec.model_fields["max_concurrent_nodes"].default
    assert default == catalog.limit("azure", "ib_scale_set_max_vms")
    regions = target_regions(SHIPPED_STACKS / "Pulumi.azure-images.yaml")
    assert [r["name"] for r in regions] == ["eastus", "southcentralus"]
    # Both regions are marked with availability zones in Microsoft's region list (catalog zone_regions).
    assert {"eastus", "southcentralus"} <= zone_regions(catalog)
    assert all(r["replicaCount"] == 5 and r["storageAccountType"] == "Standard_ZRS" for r in regions), regions


def test_the_replicas_follow_the_stacks_scale_out(tmp_path: Path) -> None:
    regions = target_regions(images_stack(tmp_path, "azure", max_concurrent_nodes=300))
    assert [r["replicaCount"] for r in regions] == [math.ceil(300 / 20)] * 2


@pytest.mark.parametrize(("vms", "replicas"), [(1, 3), (60, 3), (61, 4), (100, 5), (999, 50), (1000, 50)])
def test_one_replica_per_20_concurrent_vms_at_least_3(vms: int, replicas: int) -> None:
    assert replicas_per_region(vms, load_catalog()) == replicas


def test_a_region_without_zones_keeps_locally_redundant_replicas() -> None:
    catalog = load_catalog()
    assert "westus" not in zone_regions(catalog)  # no availability zones in the region list
    found = build(args(regions=["eastus", "westus"], replicas=4,
                       zone_redundant_regions=zone_regions(catalog) & {"eastus", "westus"}))
    regions = one(found, TEMPLATE).inputs["distribute"][0]["targetRegions"]
    assert regions == [
        {"name": "eastus", "replicaCount": 4, "storageAccountType": "Standard_ZRS"},
        {"name": "westus", "replicaCount": 4, "storageAccountType": "Standard_LRS"},
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_concurrent_nodes": 0}, "max_concurrent_nodes: Input should be greater than or equal to 1"),
        ({"max_concurrent_nodes": 1001}, "max_concurrent_nodes: at most 1000"),
        # 1000 VMs want 50 replicas in each region: three regions would hold 150, over an image version's 100.
        ({"max_concurrent_nodes": 1000, "regions": ["eastus", "southcentralus", "westus"]},
         "max_concurrent_nodes: 50 replicas in each of 3 regions is 150, over the 100 replicas"),
    ],
)
def test_past_the_gallery_limits_is_exit_2_naming_the_field(tmp_path: Path, changes: dict, message: str) -> None:
    assert message in refused(images_stack(tmp_path, "azure", **changes))
