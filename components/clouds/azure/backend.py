"""Azure behind the backend protocol: InfiniBand facts, spec model and checks (no components yet)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backend import BackendDefaults
from . import rules
from .spec import AzureClusterSpec

if TYPE_CHECKING:
    from ...catalog import InstanceType


class AzureBackend(BackendDefaults):
    name = "azure"
    provider = "azure-native"
    region_key = "azure-native:location"
    spec_model = AzureClusterSpec
    checks = rules.CHECKS
    capacities = frozenset({"on-demand", "spot", "reservation"})

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        # InfiniBand runs on its own network: a node takes one address of the VNet subnet.
        return 1


BACKEND = AzureBackend()
