"""Typed view of the instance catalog: facts and prices per cloud, read from data/*.yaml."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ..clouds.registry import Cloud
from ..lock.boot_modes import BootMode
from ..yaml_model import StrictModel

FabricKind = Literal["efa", "infiniband", "erdma", "roce", "none"]


class Price(StrictModel):
    """Hourly USD price of one instance type in one region: a snapshot, never a quote."""

    on_demand: float | None = Field(None, description="USD per hour; null where the source left it empty")
    spot: float | None = Field(None, description="USD per hour; null where none is published")
    spot_zone_id: str | None = Field(
        None, pattern=r"^[a-z]+\d+-az\d+$",
        description="the AZ ID whose figure `spot` is, where the cloud prices spot per zone (AWS: use1-az1). An AZ ID "
        "is the same zone in every account; a zone name (us-east-1a) maps to a different one per account (AWS, "
        "Regions and Availability Zones, AZ IDs: docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html)",
    )
    offered: bool = Field(
        True, description="false: the source lists the type in other regions but not in this one (no prices then)"
    )
    source: str = Field(..., min_length=3, description="where the figure was read")
    date: str = Field(..., pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="when the source was read")

    @model_validator(mode="after")
    def _not_offered_has_no_price(self) -> Price:
        # A zero or leftover figure for a type the region does not sell would read as a real price.
        if not self.offered and (self.on_demand is not None or self.spot is not None):
            raise ValueError("offered: false takes no on_demand or spot price")
        if self.spot_zone_id is not None and self.spot is None:
            raise ValueError("spot_zone_id names the zone of a spot price: set spot too, or drop it")
        return self


# GPU architectures by generation. NVIDIA's open kernel modules drive Turing and newer only (open-gpu-kernel-modules
# README: "supported on Turing and later GPUs"); gpufleet.lock.check ties a profile's module flavour to these.
GpuArchitecture = Literal["volta", "turing", "ampere", "ada", "hopper", "blackwell"]


class Gpu(StrictModel):
    model: str = Field(..., description="marketing model, e.g. H100, A100, L40S")
    architecture: GpuArchitecture = Field(..., description="the model's GPU architecture (NVIDIA's product pages)")
    count: int = Field(..., ge=1)
    memory_gb: float | None = Field(None, description="memory per GPU as published (GB or GiB as the source says)")


class Fabric(StrictModel):
    kind: FabricKind
    interfaces: int = Field(0, ge=0, description="EFA interfaces, IB HCAs or ERIs the type takes")
    gbps: float | None = Field(None, description="aggregate fabric / network bandwidth")


class LocalNvme(StrictModel):
    count: int = Field(..., ge=0)
    size_gb: float | None = Field(None, ge=0, description="size of each device")


class InstanceType(StrictModel):
    """One instance type (AWS), VM size (Azure) or instance type (Alibaba)."""

    name: str
    cloud: Cloud
    gpu: Gpu
    vcpu: int | None = None
    memory_gib: float | None = None
    fabric: Fabric
    network_gbps: float | None = None
    nvswitch: bool
    local_nvme: LocalNvme | None = None
    boot_modes: list[BootMode] | None = Field(
        None, min_length=1, description="Alibaba: the boot modes the type boots, as its source lists them; null: "
        "not published in the sources read (a group of it is refused until one is cited)")
    source: str = Field(..., min_length=3, description="where the facts were read")
    unconfirmed: dict[str, str] = Field(
        default_factory=dict, description="field -> why it is left null (could not be confirmed)"
    )
    prices: dict[str, Price] = Field(default_factory=dict, description="region -> price snapshot")

    @property
    def rdma(self) -> bool:
        return self.fabric.kind != "none" and self.fabric.interfaces > 0

    def price(self, region: str) -> Price | None:
        return self.prices.get(region)


class Limit(StrictModel):
    """A published limit of the cloud that a check relies on (an IB scale-set cap, reserved addresses...)."""

    value: int | str
    source: str = Field(..., min_length=3, description="where the limit is published")


class BuildType(StrictModel):
    """A machine type an image pipeline builds on: installing drivers needs no GPU, so it need not be a GPU type."""

    vcpu: int = Field(..., ge=1)
    memory_gib: float = Field(..., gt=0)
    source: str = Field(..., min_length=3, description="where the facts were read")


class SystemType(BuildType):
    """A general-purpose CPU type for a Kubernetes cluster's system group (CoreDNS, operators, the autoscaler, job
    launchers): facts and on-demand prices where a source publishes them."""

    default: bool = Field(False, description="the type a system group without instance_type runs (one per cloud)")
    prices: dict[str, Price] = Field(default_factory=dict, description="region -> price snapshot")

    def price(self, region: str) -> Price | None:
        return self.prices.get(region)


class CloudCatalog(StrictModel):
    cloud: Cloud

    @model_validator(mode="before")
    @classmethod
    def _rows_know_their_name_and_cloud(cls, raw: Any) -> Any:
        """A row's name is its key and its cloud the file's: copied in so an InstanceType knows both."""
        if isinstance(raw, dict) and isinstance(raw.get("instances"), dict):
            rows = {
                name: {"name": name, "cloud": raw.get("cloud"), **row} if isinstance(row, dict) else row
                for name, row in raw["instances"].items()
            }
            return {**raw, "instances": rows}
        return raw

    limits: dict[str, Limit] = Field(default_factory=dict, description="limit name -> value with its source")
    instances: dict[str, InstanceType]
    build_types: dict[str, BuildType] = Field(
        default_factory=dict, description="machine types the image pipeline may build on, besides the GPU types"
    )
    system_types: dict[str, SystemType] = Field(
        default_factory=dict, description="CPU types a Kubernetes system group may run, one of them the default"
    )

    @model_validator(mode="after")
    def _one_default_system_type(self) -> CloudCatalog:
        defaults = [name for name, row in self.system_types.items() if row.default]
        if self.system_types and len(defaults) != 1:
            raise ValueError(f"system_types need exactly one default: true, found {len(defaults)}")
        return self
