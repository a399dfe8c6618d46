"""The Alibaba Cloud stack-file settings: the VPC, vSwitches, security group, RAM role and disk key a user may
bring, the KMS instance a created key lives in; the image stack's build instance type."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...stackfile.buckets import OssUri
from ...stackfile.models import ClusterSpec, ImagesSpec, Network, Storage
from ...yaml_model import StrictModel


class AlicloudNetworkSettings(Network):
    """Create a VPC from `cidr`, or bring one with vpc_id and one vSwitch per zone."""

    BRING = ("vpc_id", "vswitch_ids")
    PER_ZONE = "vswitch_ids"

    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-z]{8,32}$", description="bring: existing VPC id")
    vswitch_ids: list[str] = Field(
        default_factory=list, description="bring: existing vSwitch ids, one per zone in network.zones order"
    )
    security_group_id: str | None = Field(
        None,
        pattern=r"^sg-[0-9a-z]{8,32}$",
        description="bring: an existing node security group; it must accept all traffic among its members "
        "(ERIs use their ENI's rules). Unset: gpufleet creates one.",
    )


class AlicloudStorageSettings(Storage):
    """The disk key: created in a KMS instance, or brought."""

    dkms_instance_id: str | None = Field(
        None,
        pattern=r"^kst-[0-9a-z]{8,40}$",
        description="the KMS instance (kst-...) a created disk key lives in; required with kms_key: create (a key "
        "made outside an instance is the region's one default key)",
    )


class AlicloudIdentitySettings(StrictModel):
    """What the node RAM role may reach, or a role brought by the user."""

    oss_read_prefixes: list[OssUri] = Field(
        default_factory=list,
        description="oss://bucket/prefix the nodes may read (datasets, checkpoints)",
    )
    ram_role_name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9.-]{1,64}$",
        description="bring: an existing RAM role trusted by ecs.aliyuncs.com; unset: gpufleet creates a "
        "least-privilege role",
    )


class AlicloudClusterSpec(ClusterSpec):
    cloud: Literal["alicloud"] = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    network: AlicloudNetworkSettings = Field(..., description="the VPC: created (cidr, zones) or brought (vswitch ids)")
    storage: AlicloudStorageSettings = Field(
        default_factory=AlicloudStorageSettings,
        description="disk key, system disk, local NVMe",
    )
    identity: AlicloudIdentitySettings = Field(
        default_factory=AlicloudIdentitySettings,
        description="the node RAM role: created least-privilege, or brought by name",
    )
    low_latency_groups: list[str] = Field(
        default_factory=list,
        description="node groups placed in a LowLatency deployment set (one zone, at most 20 instances, "
        "no spot; groups without ERIs only: an ESS scaling configuration takes no deployment set)",
    )


class AlicloudImagesSpec(ImagesSpec):
    """The ECS image pipeline (Image Builder). No key setting: CreateImagePipeline has no KMS or encryption
    parameter, so baked images are unencrypted; clusters encrypt the disks they create from them with their own
    KMS key."""

    BUILD_FIELD = "build_instance_type"

    cloud: Literal["alicloud"] = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    build_instance_type: str = Field(
        "ecs.g7.2xlarge",
        description="instance type of the build instance (InstanceType): no GPU is needed to install drivers",
    )
