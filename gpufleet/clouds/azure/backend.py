"""Azure behind the backend protocol: InfiniBand facts, scale set names, the cluster component, offline answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..backend import BackendDefaults, FabricGroup
from . import checks as rules
from .names import NAMES, VMSS
from .stack_model import AzureClusterSpec, AzureImagesSpec

if TYPE_CHECKING:
    from ...catalog import InstanceType
    from ...resolve import ResolvedCluster


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

    def build_images(self, spec: AzureImagesSpec) -> Mapping[str, Any]:
        from components.clouds.azure.images_stack import (
            build_azure_images,
        )  # pulumi_azure_native loads only when Azure images are built

        return build_azure_images(spec)

    def build_cluster(self, resolved: ResolvedCluster) -> Mapping[str, Any]:
        from components.clouds.azure.cluster import (
            AzureGpuCluster,
        )  # pulumi_azure_native loads only when an Azure cluster is built

        return AzureGpuCluster(resolved).exports()

    def mock_resource(self, typ: str, name: str, inputs: dict[str, Any], region: str) -> tuple[str, dict[str, Any]]:
        from . import mock_answers as mocks

        return mocks.new_resource(typ, name, inputs, region)

    def mock_invoke(self, token: str, region: str, zones: list[str]) -> dict[str, Any] | None:
        from . import mock_answers as mocks

        return mocks.invoke(token, region, zones)


BACKEND = AzureBackend()
