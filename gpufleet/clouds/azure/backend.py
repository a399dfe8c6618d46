"""Azure behind the backend protocol: its stack models and checks, capabilities, InfiniBand facts, scale set names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backend import BackendDefaults, FabricGroup, StackModels
from .names import NAMES, VMSS

if TYPE_CHECKING:
    from ...catalog import InstanceType


class AzureBackend(BackendDefaults):
    name = "azure"
    scaling_group_name_max = NAMES.limit(VMSS, "vmScaleSetName")
    provider = "azure-native"
    region_key = "azure-native:location"
    operations = frozenset({"monitoring", "idle", "budget_alerts", "shared_storage", "alarm_emails"})
    capacities = frozenset({"on-demand", "spot", "reservation"})

    @staticmethod
    def stack_models() -> StackModels:
        from .checks import CHECKS
        from .stack_model import AzureClusterSpec, AzureImagesSpec

        return StackModels(AzureClusterSpec, AzureImagesSpec, CHECKS)

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        # InfiniBand runs on its own network: a node takes one address of the VNet subnet.
        return 1

    def fabric_group(self, instance: InstanceType) -> FabricGroup | None:
        # InfiniBand reaches only inside one singlePlacementGroup scale set (rules.infiniband_limits).
        if instance.fabric.kind != "infiniband":
            return None
        return FabricGroup("InfiniBand scale set", "ib_scale_set_max_vms", takes_spot=True)


BACKEND = AzureBackend()
