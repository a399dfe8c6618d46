"""Pydantic models of the `gpufleet:cluster` and `gpufleet:images` stack config keys (DESIGN.md names)."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    field_validator,
    model_validator,
)

from ..clouds.registry import Cloud
from ..yaml_model import StrictModel
from .address_ranges import cidrs_written_as_text, too_wide
from .gpu_sharing import GpuSharing
from .monitoring import Budget, Monitoring
from .mounts import mount_problem, normal
from .scheduler import LABEL_KEY, LABEL_VALUE, Scheduler, Taint, derive_defaults

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


class Idle(StrictModel):
    """Scale a node group to its min when its GPUs sit idle, through the cloud's own scaling policy on the
    published GPU utilisation metric (no controller of gpufleet's). Scaling back up is the job scheduler's or
    the user's (set desired capacity): an idle group has no load to scale on."""

    gpu_util_below: int = Field(
        ..., ge=1, le=100, strict=True, description="percent: the group's average GPU utilisation under this is idle"
    )
    for_minutes: int = Field(
        ..., ge=5, le=1440, strict=True, description="minutes the group must stay under it before scaling to min"
    )


class NodeGroup(StrictModel):
    """One scaling group of identical GPU nodes."""

    name: str = Field(..., pattern=NAME_PATTERN, description="lower-case letters, digits, dashes")
    instance_types: list[str] = Field(..., min_length=1, description="first is primary, the rest fallbacks")
    size: Size = Field(..., description="min <= desired <= max nodes")
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
    idle: Idle | None = Field(None, description="scale to size.min when GPUs stay idle; unset: never (the default)")
    gpu_sharing: GpuSharing = Field(
        default_factory=GpuSharing, description="whole GPUs (the default), MIG, time-slicing or memory-isolated (ACK)"
    )
    labels: dict[Annotated[str, Field(pattern=LABEL_KEY)], Annotated[str, Field(pattern=LABEL_VALUE)]] = Field(
        default_factory=dict, description="scheduler kubernetes: labels every node of the group carries")
    taints: list[Taint] = Field(default_factory=list, description="scheduler kubernetes: taints of every node")

    @field_validator("instance_types")
    @classmethod
    def _unique_types(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("instance types repeat; list each once, primary first")
        return value

    @property
    def spot(self) -> bool:
        """Spot nodes may run in the group: capacity spot, or mixed (spot above on_demand_base)."""
        return self.capacity in ("spot", "mixed")


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
        return cidrs_written_as_text(value)

    @field_validator("admin_cidrs")
    @classmethod
    def _admin_ranges_narrow(cls, value: list[IPv4Network]) -> list[IPv4Network]:
        # The ranges together, as the security group opens them: two halves of the internet are the internet.
        wide = too_wide(value)
        if wide:
            shown = ", ".join(map(str, value))
            raise ValueError(f"{shown} open SSH to {wide} (the widest public range allowed): list only the office "
                             "or VPN ranges that need SSH, or none")
        return value

    def brought(self) -> dict[str, object]:
        """The bring-your-own fields that are set, by name (empty when gpufleet creates the network)."""
        return {name: value for name in self.BRING if (value := getattr(self, name))}


MOUNT_PATTERN = r"^/[A-Za-z0-9._/-]*$"


def plain_mount_directory(value: str, shared: bool = False) -> str:
    """A mount path of its own: not a system directory (spec/mounts.py), written in its plain form."""
    problem = mount_problem(value, shared)
    if problem:
        raise ValueError(problem)
    if normal(value) != value:
        raise ValueError(f"{value!r} must be a plain absolute directory (like /scratch): write {normal(value)!r}")
    return value


class SharedStorage(StrictModel):
    """A shared dataset file system every node mounts: FSx for Lustre on AWS, Azure Managed Lustre on Azure (CPFS
    is a provider gap on Alibaba). Encrypted with the stack's key, reachable only from the node security group."""

    kind: Literal["lustre"] = Field("lustre", description="lustre: the cloud's managed Lustre service")
    capacity_tib: float = Field(
        ...,
        gt=0,
        description="size in TiB as the service sells it (FSx for Lustre: 1.2, 2.4, then steps of 2.4; "
        "1.2 TiB is 1200 GiB; Azure Managed Lustre: per tier, e.g. 8 to 128 in steps of 8 at 250 MB/s/TiB); checked "
        "against the service's increments before any resource",
    )
    throughput_mb_per_tib: int | None = Field(
        None, ge=1, strict=True,
        description="MB/s per TiB; null: the cloud's lowest tier (FSx PERSISTENT_2: 125; Azure Managed Lustre: 40)",
    )
    mount: str = Field("/data", pattern=MOUNT_PATTERN, description="absolute mount path on every node")

    @field_validator("capacity_tib", mode="before")
    @classmethod
    def _a_number(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{value!r} is not a number of TiB; write it like 2.4")
        return value

    @field_validator("mount")
    @classmethod
    def _mount_of_its_own(cls, value: str) -> str:
        return plain_mount_directory(value, shared=True)

    @property
    def capacity_gib(self) -> int | None:
        """The size in GiB the service's API takes (1.2 TiB -> 1200 GiB, the services' own reading); None when
        capacity_tib has more than one decimal GiB would not be whole."""
        gib = self.capacity_tib * 1000
        return round(gib) if abs(gib - round(gib)) < 1e-6 else None


class Storage(StrictModel):
    kms_key: str = Field("create", description="create | an existing key id or ARN / Key Vault key id")
    root_volume_gb: int = Field(200, ge=30, strict=True, le=16384, description="root disk size in GB")
    scratch: ScratchMode = Field("raid0", description="raid0 (stripe local NVMe) | none")
    scratch_mount: str = Field("/scratch", pattern=MOUNT_PATTERN, description="absolute mount path")
    shared: SharedStorage | None = Field(None, description="a shared dataset file system; unset: none (the default)")

    @field_validator("scratch_mount")
    @classmethod
    def _scratch_of_its_own(cls, value: str) -> str:
        # The bootstrap formats and mounts the array here.
        return plain_mount_directory(value)

    @model_validator(mode="after")
    def _mounts_apart(self) -> Storage:
        if self.shared is not None and self.scratch == "raid0":
            a, b = self.shared.mount, self.scratch_mount
            if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                raise ValueError(f"shared.mount {a!r} and scratch_mount {b!r} overlap; give each its own directory")
        return self


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


def _image_derivable(schema: dict[str, Any]) -> None:
    """An EKS stack may leave `image` out (derive_defaults): the schema must not call it required there."""
    schema["required"] = [name for name in schema.get("required", []) if name != "image"]


class ClusterSpec(StrictModel):
    """The `gpufleet:cluster` key: one cluster in one environment (each cloud's model extends this one)."""

    model_config = ConfigDict(json_schema_extra=_image_derivable)

    name: str = Field(..., pattern=NAME_PATTERN, description="lower-case letters, digits, dashes")
    cloud: Cloud = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    region: str = Field(..., min_length=2, description="the cloud's region name, e.g. us-east-1, eastus, cn-beijing")
    environment: Environment = Field("dev", description="dev | staging | prod: part of every name, so two "
                                                        "environments of one cluster never collide")
    tags: Tags = Field(default_factory=dict, description="tags (labels) on every resource that takes them; text values")
    network: Network = Field(..., description="where the nodes live: a created network or one brought by id")
    image: str = Field(..., description="a profile in images/lock.yaml; on EKS derived from scheduler.version when "
                                        "left out")
    storage: Storage = Field(default_factory=Storage, description="disk encryption key, root volume, local NVMe")
    bootstrap: Bootstrap = Field(default_factory=Bootstrap, description="what each node runs at boot")
    node_groups: list[NodeGroup] = Field(..., min_length=1, description="the GPU node groups, one scaling group "
                                                                        "each")
    scheduler: Scheduler = Field(default_factory=Scheduler, description="none (VMs, the default) | kubernetes")
    budget: Budget = Field(default_factory=Budget, description="the worst-case hourly cost cap and spend alerts")
    monitoring: Monitoring = Field(default_factory=Monitoring, description="GPU metrics, alarms and who they notify")
    prices: dict[str, StackPrice] = Field(
        default_factory=dict, description="instance type -> the stack's own USD price; wins over the catalog's"
    )
    _derived: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _scheduler_defaults(cls, data: Any, handler: ModelWrapValidatorHandler[ClusterSpec]) -> ClusterSpec:
        """Fill what the scheduler implies where the stack wrote nothing (scheduler.derive_defaults)."""
        derived: tuple[str, ...] = ()
        if isinstance(data, dict):
            data, derived = derive_defaults(data)
        spec = handler(data)
        spec._derived = derived or spec._derived
        return spec

    @property
    def derived(self) -> tuple[str, ...]:
        """What the stack did not write and was derived from its scheduler, one line each (the plan shows them)."""
        return self._derived


class ImagesSpec(StrictModel):
    """The `gpufleet:images` key: a stack that bakes image profiles instead of running a cluster (each cloud's
    model extends this one with the settings its image pipeline takes)."""

    name: str = Field(..., pattern=NAME_PATTERN, description="lower-case letters, digits, dashes")
    cloud: Cloud = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    regions: list[str] = Field(..., min_length=1, description="first is where the build runs, the rest get copies")
    profile: str = Field(..., description="a profile in images/lock.yaml")
    nvswitch: bool = Field(True, description="enable the fabric manager (HGX/NVSwitch types: p4d, p5, ND, ...)")
    tags: Tags = Field(default_factory=dict, description="tags (labels) on every resource that takes them")

    BUILD_FIELD: ClassVar[str]
    """The cloud model's field naming the machine type(s) the pipeline builds on."""

    def build_types(self) -> list[tuple[str, str]]:
        """(field path, machine type) of every build machine the stack names."""
        value = getattr(self, self.BUILD_FIELD)
        if isinstance(value, list):
            return [(f"{self.BUILD_FIELD}[{i}]", name) for i, name in enumerate(value)]
        return [(self.BUILD_FIELD, value)]

    def unpriced_standing(self) -> list[str]:
        """What the stack keeps billing between bakes that the catalog cannot price (the plan's cost is then null,
        never 0); none by default."""
        return []
