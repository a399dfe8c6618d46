"""Alibaba Cloud behind the backend protocol: eRDMA facts, spec model and checks (no components yet)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backend import BackendDefaults
from . import rules
from .spec import AlicloudClusterSpec

if TYPE_CHECKING:
    from ...catalog import InstanceType


class AlicloudBackend(BackendDefaults):
    name = "alicloud"
    provider = "alicloud"
    region_key = "alicloud:region"
    spec_model = AlicloudClusterSpec
    checks = rules.CHECKS
    capacities = frozenset({"on-demand", "spot", "mixed", "reservation"})

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        # Each ERI is an elastic network interface with its own vSwitch address, beside the primary one.
        return 1 + self.interfaces_in_use(instance, rdma)


BACKEND = AlicloudBackend()
