"""Alibaba Cloud behind the backend protocol: its stack models and checks, capabilities, ERI facts, ESS names."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import TYPE_CHECKING

from components.clouds.alicloud.eri import addresses_per_node, eri_count

from ...catalog import hourly_cost
from ..backend import BackendDefaults, FabricGroup, StackModels
from .names import NAMES

if TYPE_CHECKING:
    from ...catalog import InstanceType
    from ...stackfile.models import ClusterSpec, NodeGroup


class AlicloudBackend(BackendDefaults):
    name = "alicloud"
    provider = "alicloud"
    region_key = "alicloud:region"
    scaling_group_name_max = NAMES.limit("alicloud:ess/scalingGroup:ScalingGroup", "scalingGroupName")
    # Reservations (private pools) are not wired yet: a stack asking for one stops at the spec check.
    capacities = frozenset({"on-demand", "spot", "mixed"})
    operations = frozenset({"monitoring", "idle", "alarm_emails"})
    operation_gaps = MappingProxyType({
        "budget_alerts": "pulumi-alicloud 4.0.0 has no budget resource (Budget Management of Expenses and Costs is "
        "console-only here); set budget alerts in the console",
        "shared_storage": "pulumi-alicloud 4.0.0 nas.FileSystem encrypts with a customer KMS key (encrypt_type 2) "
        "only for extreme NAS, not CPFS, and takes no security group for the CPFS mount target, so CPFS cannot be "
        "encrypted with the stack's key or limited to the node security group",
    })

    @staticmethod
    def stack_models() -> StackModels:
        from .checks import CHECKS
        from .stack_model import AlicloudClusterSpec, AlicloudImagesSpec

        return StackModels(AlicloudClusterSpec, AlicloudImagesSpec, CHECKS)

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        # ERIs on eRDMA types; the SCC types' RoCE NICs are built in and take no vSwitch address.
        return eri_count(instance, rdma) or (instance.fabric.interfaces if rdma else 0)

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        return addresses_per_node(instance, rdma)

    def priced_type(self, spec: ClusterSpec, group: NodeGroup,
                    types: tuple[InstanceType | None, ...]) -> InstanceType | None:
        # A COST_OPTIMIZED group (spot and mixed, nodegroup.py) launches its types in ascending vCPU unit price, not
        # primary first (Auto Scaling "scaling policy" docs), so any of them may run: price it at the dearest, and
        # unknown (None) when one is unpriced or unknown.
        if not group.spot or len(types) == 1:
            return types[0]
        priced = [(hourly_cost(t, spec.region, 1, 0, spec.prices.get(t.name)), t) for t in types if t is not None]
        if len(priced) < len(types) or any(cost is None for cost, _ in priced):
            return None
        return max(priced, key=lambda pair: pair[0] or 0.0)[1]

    def zone_pattern(self, region: str) -> str | None:
        return rf"{re.escape(region)}-[a-z]"  # cn-wulanchabu-c

    def fabric_group(self, instance: InstanceType) -> FabricGroup | None:
        # ERIs reach across the zone; other types get low latency only in a LowLatency deployment set, which
        # takes no ERI group (rules.low_latency_fits).
        if eri_count(instance, rdma=True):
            return None
        return FabricGroup("LowLatency deployment set", "deployment_set_low_latency_max_instances", takes_spot=False)


BACKEND = AlicloudBackend()
