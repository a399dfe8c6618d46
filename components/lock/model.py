"""Typed view of images/lock.yaml: profiles of pinned driver/CUDA stacks and the images that carry them."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The fabric stack components each cloud's installer needs.
FABRIC_COMPONENTS: dict[str, tuple[str, ...]] = {
    "aws": ("efa_installer", "aws_ofi_nccl"),
    "azure": ("doca",),
    "alicloud": ("erdma",),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FabricComponent(_Strict):
    """One piece of a cloud's RDMA stack (EFA installer, aws-ofi-nccl, DOCA-OFED, eRDMA)."""

    version: str = Field(..., min_length=1)
    url: str | None = None
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    bundled_in: str | None = Field(None, description="installed by this other component, not on its own")
    unconfirmed: str | None = Field(None, description="why sha256 (or another field) is left null")


class NodecheckPins(_Strict):
    nvidia_ml_py: str = Field(..., min_length=1)


class Profile(_Strict):
    """One pinned stack: driver, fabric manager, CUDA, NCCL, DCGM, fabric per cloud, images per region."""

    name: str
    driver: str = Field(..., min_length=1)
    fabric_manager: str = Field(..., min_length=1)
    cuda: str = Field(..., min_length=1)
    nccl: str = Field(..., min_length=1)
    dcgm: str = Field(..., min_length=1)
    apt: dict[str, str] = Field(..., min_length=1, description="Ubuntu package -> exact version to pin")
    driver_pinning_package: str = Field(..., min_length=1)
    nodecheck: NodecheckPins
    fabric: dict[str, dict[str, FabricComponent]]
    images: dict[str, dict[str, str]] = Field(..., description="cloud -> region -> image id")
    image_notes: dict[str, dict[str, str]] = Field(default_factory=dict, description="cloud -> region -> note")
    sources: dict[str, str] = Field(..., min_length=1, description="field -> where its value was read")

    @model_validator(mode="before")
    @classmethod
    def _split_image_entries(cls, raw: Any) -> Any:
        """Image entries are either a bare id or {id, note}; keep ids and notes in separate maps."""
        if not isinstance(raw, dict) or not isinstance(raw.get("images"), dict):
            return raw
        ids: dict[str, Any] = {}
        notes: dict[str, dict[str, str]] = {}
        for cloud, regions in raw["images"].items():
            if not isinstance(regions, dict):
                ids[cloud] = regions
                continue
            ids[cloud] = {}
            for region, entry in regions.items():
                if isinstance(entry, dict) and set(entry) <= {"id", "note"} and "id" in entry:
                    ids[cloud][region] = entry["id"]
                    if entry.get("note"):
                        notes.setdefault(cloud, {})[region] = entry["note"]
                else:
                    ids[cloud][region] = entry
        return {**raw, "images": ids, "image_notes": notes}

    @model_validator(mode="after")
    def _fabric_complete(self) -> Profile:
        for cloud, components in self.fabric.items():
            if cloud not in FABRIC_COMPONENTS:
                raise ValueError(f"fabric.{cloud}: unknown cloud (expected one of {sorted(FABRIC_COMPONENTS)})")
            missing = [c for c in FABRIC_COMPONENTS[cloud] if c not in components]
            if missing:
                raise ValueError(f"fabric.{cloud}: missing {', '.join(missing)}")
        for cloud in self.images:
            if cloud not in FABRIC_COMPONENTS:
                raise ValueError(f"images.{cloud}: unknown cloud (expected one of {sorted(FABRIC_COMPONENTS)})")
        return self


class DriverBranch(_Strict):
    kind: Literal["lts", "production", "new-feature", "unsupported"]
    supported: bool
    eol: date | None = None
    note: str | None = None


class DriverBranches(_Strict):
    source: str = Field(..., min_length=3)
    branches: dict[str, DriverBranch]


class CudaMinimumDriver(_Strict):
    source: str = Field(..., min_length=3)
    versions: dict[str, str] = Field(..., description="CUDA major.minor -> minimum Linux driver")


class BaseImage(_Strict):
    """The OS image a profile is baked on, pinned per cloud and region."""

    id: str
    os: str = Field(..., description="e.g. Ubuntu 22.04 amd64")
    note: str | None = None


class Lock(_Strict):
    schema_: int = Field(..., alias="schema")
    cuda_minimum_driver: CudaMinimumDriver
    driver_branches: DriverBranches
    required_regions: dict[str, list[str]] = Field(default_factory=dict)
    pipeline_note: str | None = None
    base_images: dict[str, dict[str, BaseImage]] = Field(
        default_factory=dict, description="cloud -> region -> the OS image pipelines bake on"
    )
    profiles: dict[str, Profile]

    def base_image(self, cloud: str, region: str) -> str | None:
        found = self.base_images.get(cloud, {}).get(region)
        return found.id if found else None

    def image_id(self, profile: str, cloud: str, region: str) -> str | None:
        """The image to boot for this profile in this cloud and region, or None where the lock has none."""
        found = self.profiles.get(profile)
        return found.images.get(cloud, {}).get(region) if found else None

    def image_ids(self, cloud: str) -> set[str]:
        """Every image id of one cloud, baked and base (policies use it to allow only locked images)."""
        baked = {image for p in self.profiles.values() for image in p.images.get(cloud, {}).values()}
        return baked | {base.id for base in self.base_images.get(cloud, {}).values()}
