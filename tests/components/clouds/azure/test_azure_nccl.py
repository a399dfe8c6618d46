"""Azure InfiniBand groups write /etc/nccl.conf for their VM family at boot (ND A100 v4: ndv4, ND H100/H200 v5:
ndv5, the families azhpc-images keys its NCCL settings and topology files by); a group off InfiniBand writes none.
Read from the scale set's rendered customData."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure_plans import INFER, TRAIN, VMSS, cloud_init, node_settings, one, plan_variant, shipped, variant

from components.clouds.azure.nccl import nccl_family

UNIT = "/etc/systemd/system/gpufleet-nccl-conf.service"


def _family(scale_set: object) -> str | None:
    written = {f["path"] for f in cloud_init(scale_set)["write_files"]}
    family = node_settings(scale_set).get("GPUFLEET_NCCL_FAMILY")
    assert (family is not None) is (UNIT in written)
    return family


def test_the_nd_h100_v5_group_writes_the_ndv5_conf() -> None:
    assert _family(one(shipped(TRAIN), VMSS)) == "ndv5"


def test_a_group_off_infiniband_writes_none() -> None:
    assert _family(one(shipped(INFER), VMSS)) is None


def test_an_nd_a100_v4_group_writes_the_ndv4_conf(tmp_path: Path) -> None:
    cluster = variant(TRAIN, group={"instance_types": ["Standard_ND96amsr_A100_v4"]},
                      budget={"max_hourly_usd": 1000})
    assert _family(one(plan_variant(tmp_path, cluster), VMSS)) == "ndv4"


@pytest.mark.parametrize(("size", "rdma", "family"), [
    ("Standard_ND96asr_v4", True, "ndv4"), ("Standard_ND96amsr_A100_v4", True, "ndv4"),
    ("Standard_ND96isr_H100_v5", True, "ndv5"), ("Standard_ND96isr_H200_v5", True, "ndv5"),
    ("Standard_ND96isr_H100_v5", False, None), ("Standard_NC24ads_A100_v4", False, None),
])
def test_the_family_follows_azhpc_images_size_patterns(size: str, rdma: bool, family: str | None) -> None:
    assert nccl_family(size, rdma) == family
