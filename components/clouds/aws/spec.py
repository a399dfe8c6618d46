"""The AWS stack-file settings: the network, identity and security group a user may bring."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...spec.models import SERVICE_LINKED_ROLES_HELP, ClusterSpec, Network, ServiceLinkedRoles
from ...yaml_model import StrictModel


class AwsNetworkSettings(Network):
    """Create a VPC from `cidr`, or bring one with vpc_id and one private subnet per zone."""

    BRING = ("vpc_id", "subnet_ids")
    PER_ZONE = "subnet_ids"

    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="bring: existing VPC id")
    subnet_ids: list[str] = Field(
        default_factory=list, description="bring: existing private subnet ids, one per zone in network.zones order"
    )
    security_group_id: str | None = Field(
        None,
        pattern=r"^sg-[0-9a-f]{8,17}$",
        description="bring: an existing node security group; it must allow all traffic among its members "
        "(EFA needs it both ways). Unset: gpufleet creates one.",
    )


class AwsIdentitySettings(StrictModel):
    """What the node role may reach, or an instance profile brought by the user."""

    s3_read_prefixes: list[str] = Field(
        default_factory=list, description="s3://bucket/prefix the nodes may read (datasets, checkpoints)"
    )
    permissions_boundary: str | None = Field(None, description="ARN of a permissions boundary policy")
    instance_profile_arn: str | None = Field(
        None, description="bring: an existing instance profile; unset: gpufleet creates a least-privilege role"
    )
    service_linked_roles: ServiceLinkedRoles = Field("create", description=SERVICE_LINKED_ROLES_HELP)


class AwsClusterSpec(ClusterSpec):
    cloud: Literal["aws"]
    network: AwsNetworkSettings
    identity: AwsIdentitySettings = Field(default_factory=AwsIdentitySettings)
