"""The Alibaba Cloud stack-file settings: the VPC and vSwitches a user may bring."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...spec.models import ClusterSpec, Network


class AlicloudNetworkSettings(Network):
    """Create a VPC from `cidr`, or bring one with vpc_id and one vSwitch per zone."""

    BRING = ("vpc_id", "vswitch_ids")
    PER_ZONE = "vswitch_ids"

    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-z]{8,32}$", description="bring: existing VPC id")
    vswitch_ids: list[str] = Field(
        default_factory=list, description="bring: existing vSwitch ids, one per zone in network.zones order"
    )


class AlicloudClusterSpec(ClusterSpec):
    cloud: Literal["alicloud"]
    network: AlicloudNetworkSettings
