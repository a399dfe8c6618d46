"""Pydantic models of the `gpufleet:cluster` and `gpufleet:images` stack config keys (DESIGN.md names)."""

from __future__ import annotations

import posixpath
from ipaddress import IPv4Network
from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..clouds.registry import Cloud
from ..yaml_model import StrictModel

Environment = Literal["dev", "staging", "prod"]
Capacity = Literal["on-demand", "spot", "mixed", "capacity-block", "reservation"]
RdmaMode = Literal["auto", "required", "off"]
Provisioner = Literal["autoscaling", "fleet"]
ScratchMode = Literal["raid0", "none"]


def _tags_are_text(value: object) -> object:
    # YAML 1.2 reads `cost-center: 04410` as the number 4410 and `on` as a string: a tag is text on every
    # cloud, so a value that is not already text is refused rather than quietly rewritten.
    if isinstance(value, dict):
        for key, tag in value.items():
            if not isinstance(key, str) or not isinstance(tag, str):
                raise ValueError(f"{key!r}: {tag!r} is not text (YAML 1.2 read a {type(tag).__name__}); quote it")
    return value


Tags = Annotated[dict[str, str], BeforeValidator(_tags_are_text)]

# Lower-case letters, digits and dashes, starting with a letter: valid as AWS, Azure and Alibaba resource
# names and as a DNS label.
NAME_PATTERN = r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$"


class Size(StrictModel):
    """Node counts of a group; the autoscaler moves desired between min and max."""

    min: int = Field(0, ge=0, strict=True, description="fewest nodes")
    desired: int = Field(..., ge=0, strict=True, description="nodes at creation; left to the autoscaler afterwards")
    max: int = Field(..., ge=1, strict=True, description="most nodes; the budget is checked at this size")


class NodeGroup(StrictModel):
    """One scaling group of identical GPU nodes."""

    name: str = Field(..., pattern=NAME_PATTERN, description="lower-case letters, digits, dashes")
    instance_types: list[str] = Field(..., min_length=1, description="first is primary, the rest fallbacks")
    size: Size
    capacity: Capacity = Field("on-demand", description="on-demand | spot | mixed | capacity-block | reservation")
    on_demand_base: int = Field(0, ge=0, strict=True, description="mixed/spot: on-demand nodes before any spot node")
    spot_max_price: float | None = Field(
        None, gt=0, strict=True, description="USD/hour; null caps at the on-demand price"
    )
    reservation_id: str | None = Field(None, description="capacity-block / reservation: the reservation id")
    rdma: RdmaMode = Field("auto", description="auto (use the fabric where the type has one) | required | off")
    provisioner: Provisioner = Field("autoscaling", description="autoscaling | fleet")
    zone: str | None = Field(
        None, description="RDMA groups: the one zone to use; defaults to network.zones when it has exactly one"
    )

    @field_validator("instance_types")
    @classmethod
    def _unique_types(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("instance types repeat; list each once, primary first")
        return value


class Network(StrictModel):
    """Settings every cloud's network has; each cloud's model adds the ids of a network brought instead.

    Create or bring, the one idiom for everything a user may own already: leave the `*_id` fields unset and
    gpufleet creates the thing from the settings here; set them and gpufleet uses the brought one.
    """

    cidr: IPv4Network | None = Field(None, description="CIDR of the network to create; unset when one is brought")
    zones: list[str] = Field(..., min_length=1, description="availability zones; RDMA groups use exactly one")
    admin_cidrs: list[IPv4Network] = Field(
        default_factory=list, description="SSH ingress; empty = none (use SSM / Bastion / Cloud Assistant)"
    )

    BRING: ClassVar[tuple[str, ...]] = ()
    """The fields that bring an existing network instead, in the cloud's model."""
    PER_ZONE: ClassVar[str | None] = None
    """The brought field that lists one subnet per zone, in the order of `zones`."""

    @field_validator("cidr", "admin_cidrs", mode="before")
    @classmethod
    def _cidrs_are_written_as_text(cls, value: object) -> object:
        # pydantic would read a number or a boolean as an address (`true` -> 0.0.0.1/32): refuse it instead.
        for item in value if isinstance(value, list) else [value]:
            if item is not None and not isinstance(item, str):
                raise ValueError(f"{item!r} is not a CIDR; write it as text like 10.42.0.0/16")
        return value

    def brought(self) -> dict[str, object]:
        """The bring-your-own fields that are set, by name (empty when gpufleet creates the network)."""
        return {name: value for name in self.BRING if (value := getattr(self, name))}


class Storage(StrictModel):
    kms_key: str = Field("create", description="create | an existing key id or ARN / Key Vault key id")
    root_volume_gb: int = Field(200, ge=30, strict=True, le=16384, description="root disk size in GB")
    scratch: ScratchMode = Field("raid0", description="raid0 (stripe local NVMe) | none")
    scratch_mount: str = Field("/scratch", pattern=r"^/[A-Za-z0-9._/-]*$", description="absolute mount path")

    @field_validator("scratch_mount")
    @classmethod
    def _a_directory_of_its_own(cls, value: str) -> str:
        # The bootstrap formats and mounts the array here: "/" or a path that walks up would cover the system.
        if value == "/" or posixpath.normpath(value) != value or ".." in value.split("/"):
            raise ValueError(f"{value!r} must be a plain absolute directory below / (like /scratch), no '..'")
        return value


class Bootstrap(StrictModel):
    checkpoint_hook: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        pattern=r"\S",
        description="command run once on a spot interruption or scale-in notice (e.g. save a checkpoint)",
    )
    checkpoint_grace_seconds: int = Field(
        300, ge=30, le=7200, strict=True, description="how long the terminate hook waits for the checkpoint"
    )


class Budget(StrictModel):
    max_hourly_usd: float | None = Field(
        None, gt=0, strict=True, description="USD/hour at max size; a plan over it fails"
    )


class StackPrice(StrictModel):
    """The stack's own USD price of one instance type (a negotiated rate, or a type without a published one).

    It wins over the catalog snapshot for that type in the plan summary and the budget rule, which label it.
    """

    on_demand: float = Field(..., gt=0, description="USD per hour of one on-demand node")
    spot: float | None = Field(None, gt=0, description="USD per hour of one spot node; null prices spot at on_demand")
    source: str = Field(..., min_length=3, description="where the figure comes from (a contract, a quote, a date)")

    @model_validator(mode="after")
    def _spot_not_above_on_demand(self) -> StackPrice:
        if self.spot is not None and self.spot > self.on_demand:
            raise ValueError(f"spot ({self.spot}) is above on_demand ({self.on_demand})")
        return self


class ClusterSpec(StrictModel):
    """The `gpufleet:cluster` key: one cluster in one environment (each cloud's model extends this one)."""

    name: str = Field(..., pattern=NAME_PATTERN, description="lower-case letters, digits, dashes")
    cloud: Cloud
    region: str = Field(..., min_length=2)
    environment: Environment = "dev"
    tags: Tags = Field(default_factory=dict)
    network: Network
    image: str = Field(..., description="a profile in images/lock.yaml")
    storage: Storage = Field(default_factory=Storage)
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    node_groups: list[NodeGroup] = Field(..., min_length=1)
    budget: Budget = Field(default_factory=Budget)
    prices: dict[str, StackPrice] = Field(
        default_factory=dict, description="instance type -> the stack's own USD price; wins over the catalog's"
    )


class ImagesSpec(StrictModel):
    """The `gpufleet:images` key: a stack that bakes image profiles instead of running a cluster (each cloud's
    model extends this one with the settings its image pipeline takes)."""

    name: str = Field(..., pattern=NAME_PATTERN)
    cloud: Cloud
    regions: list[str] = Field(..., min_length=1, description="first is where the build runs, the rest get copies")
    profile: str = Field(..., description="a profile in images/lock.yaml")
    nvswitch: bool = Field(True, description="enable the fabric manager (HGX/NVSwitch types: p4d, p5, ND, ...)")
    tags: Tags = Field(default_factory=dict)

    BUILD_FIELD: ClassVar[str]
    """The cloud model's field naming the machine type(s) the pipeline builds on."""

    def build_types(self) -> list[tuple[str, str]]:
        """(field path, machine type) of every build machine the stack names."""
        value = getattr(self, self.BUILD_FIELD)
        if isinstance(value, list):
            return [(f"{self.BUILD_FIELD}[{i}]", name) for i, name in enumerate(value)]
        return [(self.BUILD_FIELD, value)]
