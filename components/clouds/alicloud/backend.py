"""Alibaba Cloud behind the backend protocol: eRDMA facts, spec model and checks (no components yet)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..backend import not_built_yet, scaling_group_names
from . import rules
from .spec import AlicloudClusterSpec

if TYPE_CHECKING:
    from ...catalog import InstanceType
    from ...resolve import ResolvedCluster
    from ...spec.models import ClusterSpec, ImagesSpec


class AlicloudBackend:
    name = "alicloud"
    provider = "alicloud"
    region_key = "alicloud:region"
    spec_model = AlicloudClusterSpec
    checks = rules.CHECKS
    capacities = frozenset({"on-demand", "spot", "mixed", "reservation"})

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        return instance.fabric.interfaces if rdma else 0

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        # Each ERI is an elastic network interface with its own vSwitch address, beside the primary one.
        return 1 + self.interfaces_in_use(instance, rdma)

    def group_names(self, spec: ClusterSpec, group_name: str) -> Mapping[str, str]:
        return scaling_group_names(spec, group_name)

    def build_cluster(self, resolved: ResolvedCluster) -> Mapping[str, Any]:
        raise not_built_yet(self.name, "cluster component")

    def build_images(self, spec: ImagesSpec) -> Mapping[str, Any]:
        raise not_built_yet(self.name, "image pipeline")


BACKEND = AlicloudBackend()
