"""The Azure stack-file settings: the VNet and subnet a user may bring."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...spec.models import ClusterSpec, Network


class AzureNetworkSettings(Network):
    """Create a VNet from `cidr`, or bring one with vnet_id and subnet_id."""

    BRING = ("vnet_id", "subnet_id")

    vnet_id: str | None = Field(None, description="bring: existing VNet resource id")
    subnet_id: str | None = Field(None, description="bring: existing node subnet resource id")


class AzureClusterSpec(ClusterSpec):
    cloud: Literal["azure"]
    network: AzureNetworkSettings
