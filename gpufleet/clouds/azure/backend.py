"""Azure behind the backend protocol: its stack models and checks, capabilities, InfiniBand facts, scale set names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backend import BackendDefaults, FabricGroup
from . import checks as rules
from .names import NAMES, VMSS
from .stack_model import AzureClusterSpec, AzureImagesSpec

if TYPE_CHECKING:
    from ...catalog import InstanceType


class AzureBackend(BackendDefaults):
    name = "azure"
    scaling_group_name_max = NAMES.limit(VMSS, "vmScaleSetName")
    provider = "azure-native"
    region_key = "azure-native:location"
    spec_model = AzureClusterSpec
    images_model = AzureImagesSpec
    checks = rules.CHECKS
    operations = frozenset({"monitoring", "idle", "budget_alerts", "shared_storage", "alarm_emails"})
    capacities = frozenset({"on-demand", "spot", "reservation"})

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        # InfiniBand runs on its own network: a node takes one address of the VNet subnet.
        return 1

    def fabric_group(self, instance: InstanceType) -> FabricGroup | None:
        # InfiniBand reaches only inside one singlePlacementGroup scale set (rules.infiniband_limits).
        if instance.fabric.kind != "infiniband":
            return None
        return FabricGroup("InfiniBand scale set", "ib_scale_set_max_vms", takes_spot=True)


BACKEND = AzureBackend()
