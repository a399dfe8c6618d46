"""Typed view of images/lock.yaml: profiles of pinned driver/CUDA stacks and the images that carry them."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Discriminator, Field, PrivateAttr, Tag, model_validator

from ..yaml_model import StrictModel
from .boot_modes import BOOT_MODES, BootMode, by_boot_mode
from .download_pins import FabricComponent
from .facts import ResolvedFacts
from .kubernetes_components import KubernetesComponents
from .kubernetes_nodes import KubernetesNodeProfile
from .slurm_pins import SlurmPins

# The clouds whose images the lock keeps per boot mode (Alibaba: its instance types boot UEFI, Legacy BIOS or both).
PER_BOOT_MODE_CLOUDS = ("alicloud",)

Entry = TypeVar("Entry")
# The branches of a region's value; written <so> because they are no field (stackfile.validate drops them from paths).
ONE, PER_BOOT_MODE = "<one entry>", "<per boot mode>"


def _per_boot_mode(raw: Any) -> str:
    """A mapping keyed only by boot modes is an entry per boot mode; anything else is one entry."""
    return PER_BOOT_MODE if isinstance(raw, dict) and raw and set(raw) <= set(BOOT_MODES) else ONE


def _one_or_per_boot_mode(entry: type[Entry]) -> Any:
    """`entry`, or {uefi: entry, bios: entry}: the lock's value for one cloud region."""
    return Annotated[Annotated[entry, Tag(ONE)] | Annotated[dict[BootMode, entry], Tag(PER_BOOT_MODE)],
                     Discriminator(_per_boot_mode)]


def _per_boot_mode_only_where_kept(field: str, values: dict[str, dict[str, Any]]) -> None:
    for cloud, regions in values.items():
        for region, value in regions.items():
            if isinstance(value, dict) and cloud not in PER_BOOT_MODE_CLOUDS:
                raise ValueError(f"{field}.{cloud}.{region}: {cloud} images have no boot mode here; give one entry")


def _keyed_boot_modes(field: str, value: Any) -> Any:
    """{uefi: {...}, bios: {...}} with each entry's boot_mode set to its key."""
    if _per_boot_mode(value) != PER_BOOT_MODE:
        return value
    keyed = {}
    for mode, entry in value.items():
        if isinstance(entry, dict):
            if entry.get("boot_mode", mode) != mode:
                raise ValueError(f"{field}.{mode}.boot_mode: {entry['boot_mode']!r} under the key {mode!r}: the key "
                                 "is the boot mode")
            entry = {**entry, "boot_mode": mode}
        keyed[mode] = entry
    return keyed


# The fabric stack components each cloud's installer needs.
FABRIC_COMPONENTS: dict[str, tuple[str, ...]] = {
    "aws": ("efa_installer", "aws_ofi_nccl"),
    "azure": ("doca",),
    "alicloud": ("erdma",),
}


class NodecheckPins(StrictModel):
    """The node check's one third-party module, fetched as a wheel and checked by its sha256 (no pip on the base
    image: the bake unpacks the pure-Python wheel with python3's zipfile)."""

    nvidia_ml_py: str = Field(..., min_length=1)
    nvidia_ml_py_url: str = Field(..., pattern=r"^https://.+\.whl$")
    nvidia_ml_py_sha256: str = Field(..., pattern=r"^[0-9a-f]{64}$")


class ImageEntry(StrictModel):
    """The image of one profile in one cloud region: a baked id, or null with status unbaked."""

    id: str | None = Field(..., description="the baked image id; null until a bake is pinned")
    status: Literal["baked", "unbaked"] = Field("baked", description="unbaked: no image exists yet")
    stack: str | None = Field(None, description="the image stack (stacks/Pulumi.<stack>.yaml) that bakes it")
    base_image: str | None = Field(None, description="the base image the bake started from (written by pin)")
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_id(cls, raw: Any) -> Any:
        """A bare string is a baked id."""
        return {"id": raw} if isinstance(raw, str) else raw

    @model_validator(mode="after")
    def _id_matches_status(self) -> ImageEntry:
        if self.id is None and self.status != "unbaked":
            raise ValueError("id is null: set status: unbaked (and the stack that bakes it) or pin a baked id")
        if self.id is not None and self.status == "unbaked":
            raise ValueError(f"status is unbaked but id is {self.id!r}: an unbaked image has id null")
        return self


# What a bake installs and the image it makes: a profile whose driver ACK installs (installed_by: ack) has none of
# them, so filling them in would invent them.
BAKE_FIELDS = ("nccl", "dcgm", "apt", "driver_pinning_package", "kernel_modules", "cuda_keyring", "nodecheck", "fabric",
               "images")
# Set only on a baked profile, never required: node agents, a Kubernetes node image's section, Slurm's pieces.
BAKE_EXTRAS = ("agents", "kubernetes", "slurm")


class Profile(StrictModel):
    """One pinned stack: driver, fabric manager, CUDA, NCCL, DCGM, fabric per cloud, images per region; or, where ACK
    installs the driver on its own node image (installed_by: ack), only what the nodes are checked against."""

    name: str
    installed_by: Literal["bake", "ack"] = Field(
        "bake", description="who installs the driver on the nodes: gpufleet's image bake, or ACK (the node pool's "
                            "driver label on ACK's own node image; nothing is baked)")
    driver: str = Field(..., min_length=1)
    fabric_manager: str = Field(..., min_length=1)
    cuda: str = Field(..., min_length=1)
    nccl: str | None = Field(None, min_length=1)
    dcgm: str | None = Field(None, min_length=1)
    apt: dict[str, str] | None = Field(None, min_length=1, description="Ubuntu package -> exact version to pin")
    driver_pinning_package: str | None = Field(None, min_length=1)
    kernel_modules: Literal["open", "proprietary"] | None = Field(
        None, description="the driver's kernel module flavour the bake installs (nvidia-open: open)")
    cuda_keyring: FabricComponent | None = Field(
        None, description="NVIDIA's cuda-keyring .deb: adds the CUDA apt repository every `apt` package comes from"
    )
    nodecheck: NodecheckPins | None = None
    fabric: dict[str, dict[str, FabricComponent]] | None = None
    agents: dict[str, dict[str, FabricComponent]] = Field(
        default_factory=dict, description="cloud -> node agents the image carries (CloudWatch agent, Lustre client)"
    )
    images: dict[str, dict[str, _one_or_per_boot_mode(ImageEntry)]] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="cloud -> region -> image (Alibaba: boot mode -> image, {uefi: ..., "
        "bios: ...}); required where installed_by is bake")
    sources: dict[str, str] = Field(..., min_length=1, description="field -> where its value was read")
    kubernetes: KubernetesNodeProfile | None = Field(
        None, description="set: a Kubernetes node image (its Kubernetes minor, base images, container toolkit)")
    slurm: SlurmPins | None = Field(
        None, description="set: the VM image carries Slurm, munge, enroot and pyxis for `scheduler: slurm`")

    @property
    def baked(self) -> bool:
        """Whether gpufleet bakes this profile into images (False: ACK installs its driver, nothing is baked)."""
        return self.installed_by == "bake"

    @model_validator(mode="after")
    def _fields_of_the_installer(self) -> Profile:
        if self.baked:
            missing = [f for f in BAKE_FIELDS if getattr(self, f) is None or f not in self.model_fields_set]
            if missing:
                raise ValueError(f"{', '.join(missing)}: required where installed_by is bake (the image bake installs "
                                 "and records them)")
            return self
        given = [f for f in (*BAKE_FIELDS, *BAKE_EXTRAS) if f in self.model_fields_set]
        if given:
            raise ValueError(f"{', '.join(given)}: installed_by is ack: ACK installs the driver on its own node image "
                             "and gpufleet bakes nothing, so a bake field would be invented; remove it")
        return self

    @model_validator(mode="after")
    def _fabric_complete(self) -> Profile:
        if not self.baked:
            return self
        assert self.fabric is not None and self.cuda_keyring is not None  # _fields_of_the_installer
        for cloud, components in self.fabric.items():
            if cloud not in FABRIC_COMPONENTS:
                raise ValueError(f"fabric.{cloud}: unknown cloud (expected one of {sorted(FABRIC_COMPONENTS)})")
            missing = [c for c in FABRIC_COMPONENTS[cloud] if c not in components]
            if missing:
                raise ValueError(f"fabric.{cloud}: missing {', '.join(missing)}")
        if self.cuda_keyring.sha256 is None:
            raise ValueError("cuda_keyring.sha256: the keyring decides which repository apt trusts: pin its sha256")
        for cloud in self.images:
            if cloud not in FABRIC_COMPONENTS:
                raise ValueError(f"images.{cloud}: unknown cloud (expected one of {sorted(FABRIC_COMPONENTS)})")
        _per_boot_mode_only_where_kept("images", self.images)
        return self

    @model_validator(mode="after")
    def _slurm_only_on_vm_images(self) -> Profile:
        if self.slurm is not None and self.kubernetes is not None:
            raise ValueError("slurm: a Kubernetes node image runs no Slurm (a cluster schedules with one or the "
                             "other); pin Slurm on a VM profile")
        return self

    def image_entries(self, cloud: str, region: str) -> dict[BootMode | None, ImageEntry]:
        """The images of one cloud region by boot mode ({None: entry} where the lock keeps one); {} where none."""
        found = self.images.get(cloud, {}).get(region)
        return by_boot_mode(found) if found is not None else {}


class DriverBranch(StrictModel):
    kind: Literal["lts", "production", "new-feature", "unsupported"]
    supported: bool
    eol: date | None = None
    note: str | None = None


class DriverBranches(StrictModel):
    source: str = Field(..., min_length=3)
    branches: dict[str, DriverBranch]


class CudaMinimumDriver(StrictModel):
    source: str = Field(..., min_length=3)
    versions: dict[str, str] = Field(..., description="CUDA major.minor -> minimum Linux driver")


class BaseImage(StrictModel):
    """The OS image a pipeline bakes on, per cloud and build region (gpufleet.lock.image_ids: parent shapes).

    A reference nobody could confirm is still offered is null with status unconfirmed and a note saying how
    to confirm one: image stacks plan with it, a real `pulumi up` refuses them (gpufleet.program). Status
    resolved: an intent, not an id: `gpufleet lock resolve --only base` reads the newest of the cloud's own images
    whose name fully matches `name_regex` and records its id in images/lock.resolved.yaml (gpufleet.lock.facts,
    keyed base_image_key(cloud, region, name_regex)); the bake builds from that recorded id, so reading a stack back
    never starts a new bake. Alibaba keeps one per boot mode ({uefi: ..., bios: ...}); `boot_mode` is its key."""

    parent_image: str | None = Field(..., description="AMI id, image ARN, ssm: parameter, URN or image name")
    status: Literal["pinned", "unconfirmed", "resolved"] = Field(
        "pinned", description="unconfirmed: parent_image is null; resolved: by name_regex (`lock resolve`)")
    name_regex: str | None = Field(None, description="resolved only: the cloud's own image names it may take")
    os: str = Field(..., description="e.g. Ubuntu 22.04 amd64")
    boot_mode: BootMode | None = Field(
        None, description="the boot mode the images it names boot (Alibaba: the key of its per-boot-mode entry)")
    source: str | None = Field(None, description="where the reference was read")
    note: str | None = None

    @model_validator(mode="after")
    def _null_is_unconfirmed(self) -> BaseImage:
        if self.status == "resolved" or self.name_regex is not None:
            if self.status != "resolved" or self.parent_image is not None or not self.name_regex:
                raise ValueError("status resolved goes with a name_regex and a null parent_image (looked up at bake)")
            # Anchored and ASCII: a look-alike or suffixed name must not match.
            if not (self.name_regex.startswith("^") and self.name_regex.endswith("$")) or not self.name_regex.isascii():
                raise ValueError(f"name_regex: {self.name_regex!r} must be ASCII and anchored with ^ and $")
            try:
                re.compile(self.name_regex)
            except re.error as err:
                raise ValueError(f"name_regex: {self.name_regex!r} is not a regular expression ({err})") from None
            return self
        if self.parent_image is None and (self.status != "unconfirmed" or not self.note):
            raise ValueError("parent_image is null: set status: unconfirmed and a note saying how to confirm one")
        if self.parent_image is not None and self.status == "unconfirmed":
            raise ValueError(f"status is unconfirmed but parent_image is {self.parent_image!r}: null it or pin it")
        return self


class Lock(StrictModel):
    schema_: int = Field(..., alias="schema")
    # What `gpufleet lock resolve` recorded beside this lock (set by the loader; empty when nothing was read).
    _resolved: ResolvedFacts = PrivateAttr(default_factory=ResolvedFacts)

    @property
    def resolved(self) -> ResolvedFacts:
        return self._resolved

    @model_validator(mode="before")
    @classmethod
    def _profiles_know_their_name(cls, raw: Any) -> Any:
        """A profile's name is its key: copied in so a Profile knows its own name."""
        if isinstance(raw, dict) and isinstance(raw.get("profiles"), dict):
            named = {name: {"name": name, **body} if isinstance(body, dict) else body
                     for name, body in raw["profiles"].items()}
            return {**raw, "profiles": named}
        return raw

    cuda_minimum_driver: CudaMinimumDriver
    driver_branches: DriverBranches
    required_regions: dict[str, list[str]] = Field(default_factory=dict)
    base_images: dict[str, dict[str, _one_or_per_boot_mode(BaseImage)]] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="cloud -> region -> the OS image pipelines bake on (Alibaba: boot mode -> base image)",
    )
    profiles: dict[str, Profile]
    kubernetes_components: KubernetesComponents | None = Field(
        None, description="what a Kubernetes cluster runs inside itself: manifest sources and image pins"
    )

    @model_validator(mode="before")
    @classmethod
    def _base_images_know_their_boot_mode(cls, raw: Any) -> Any:
        """A per-boot-mode base image's boot mode is its key: copied in (a different one is refused)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("base_images"), dict):
            return raw
        clouds = {}
        for cloud, regions in raw["base_images"].items():
            if not isinstance(regions, dict):
                return raw
            clouds[cloud] = {region: _keyed_boot_modes(f"base_images.{cloud}.{region}", value)
                             for region, value in regions.items()}
        return {**raw, "base_images": clouds}

    @model_validator(mode="after")
    def _per_boot_mode_base_images_only_where_kept(self) -> Lock:
        _per_boot_mode_only_where_kept("base_images", self.base_images)
        return self

    def base_image_entries(self, cloud: str, region: str) -> dict[BootMode | None, BaseImage]:
        """A build region's base images by boot mode ({None: entry} where the lock keeps one); {} where none."""
        found = self.base_images.get(cloud, {}).get(region)
        return by_boot_mode(found) if found is not None else {}

    def base_image_entry(self, cloud: str, region: str, boot_mode: BootMode | None = None) -> BaseImage | None:
        """The lock's base image entry for a build region (pinned or unconfirmed), or None where it has none; on a
        cloud kept per boot mode, that boot mode's (without one: the first, for a question of the region's)."""
        entries = self.base_image_entries(cloud, region)
        if boot_mode is not None and None not in entries:
            return entries.get(boot_mode)
        return next(iter(entries.values()), None)

    def base_image(self, cloud: str, region: str) -> str | None:
        """The pinned parent image of a build region; None where there is no entry, it is unconfirmed, it is
        resolved (base_image_entry(...).name_regex) or kept per boot mode."""
        found = self.base_images.get(cloud, {}).get(region)
        return found.parent_image if isinstance(found, BaseImage) else None

    def profile_base_image(self, profile: str, cloud: str, region: str) -> str | None:
        """The parent image a bake of `profile` starts from in a build region: a Kubernetes profile's own base (its
        Kubernetes minor's node image), else the lock's base_images entry; None where there is none."""
        found = self.profiles.get(profile)
        if found is not None and found.kubernetes is not None:
            base = found.kubernetes.base_images.get(cloud, {}).get(region)
            return base.parent_image if base else None
        return self.base_image(cloud, region)

    def image_entries(self, profile: str, cloud: str, region: str) -> dict[BootMode | None, ImageEntry]:
        """The lock's entries for this profile, cloud and region by boot mode ({None: entry} where it keeps one)."""
        found = self.profiles.get(profile)
        return found.image_entries(cloud, region) if found else {}

    def image_entry(
        self, profile: str, cloud: str, region: str, boot_mode: BootMode | None = None
    ) -> ImageEntry | None:
        """The lock's entry for this profile, cloud and region (baked or not), or None where it has none. Kept per
        boot mode: that boot mode's; without one, the region's as a whole (an unbaked one first, else the first)."""
        entries = self.image_entries(profile, cloud, region)
        if None in entries:
            return entries[None]
        if boot_mode is not None:
            return entries.get(boot_mode)
        return next((e for e in entries.values() if e.id is None), next(iter(entries.values()), None))

    def image_id(self, profile: str, cloud: str, region: str, boot_mode: BootMode | None = None) -> str | None:
        """The baked image to boot, or None where the lock has no entry or the entry is unbaked."""
        entry = self.image_entry(profile, cloud, region, boot_mode)
        return entry.id if entry else None

    def regions(self, cloud: str) -> list[str]:
        """Every region the lock covers for a cloud: the required ones and any a profile has an image entry for."""
        found = set(self.required_regions.get(cloud, []))
        found.update(region for profile in self.profiles.values() for region in profile.images.get(cloud, {}))
        return sorted(found)

    def image_ids(self, cloud: str) -> set[str]:
        """Every image reference the lock pins for one cloud: baked ids and the pipelines' parent images
        (policies use it to allow only locked images)."""
        baked = {e.id for p in self.profiles.values() for region in p.images.get(cloud, {})
                 for e in p.image_entries(cloud, region).values() if e.id}
        nodes = {base.parent_image for p in self.profiles.values() if p.kubernetes
                 for base in p.kubernetes.base_images.get(cloud, {}).values()}
        return baked | nodes | {base.parent_image for region in self.base_images.get(cloud, {})
                                for base in self.base_image_entries(cloud, region).values() if base.parent_image}
