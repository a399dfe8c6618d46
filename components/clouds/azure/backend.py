"""Azure behind the backend protocol: InfiniBand facts, spec model and checks (no components yet)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..backend import not_built_yet, scaling_group_names
from . import rules
from .spec import AzureClusterSpec

if TYPE_CHECKING:
    from ...catalog import InstanceType
    from ...resolve import ResolvedCluster
    from ...spec.models import ClusterSpec, ImagesSpec


class AzureBackend:
    name = "azure"
    provider = "azure-native"
    region_key = "azure-native:location"
    spec_model = AzureClusterSpec
    checks = rules.CHECKS
    capacities = frozenset({"on-demand", "spot", "reservation"})

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        return instance.fabric.interfaces if rdma else 0

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        # InfiniBand runs on its own network: a node takes one address of the VNet subnet.
        return 1

    def group_names(self, spec: ClusterSpec, group_name: str) -> Mapping[str, str]:
        return scaling_group_names(spec, group_name)

    def build_cluster(self, resolved: ResolvedCluster) -> Mapping[str, Any]:
        raise not_built_yet(self.name, "cluster component")

    def build_images(self, spec: ImagesSpec) -> Mapping[str, Any]:
        raise not_built_yet(self.name, "image pipeline")


BACKEND = AzureBackend()
