"""ERIs (elastic RDMA interfaces) of a node: the single source for the scaling configuration's interfaces and
the vSwitch sizing check.

An ERI is an elastic network interface with NetworkInterfaceTrafficMode HighPerformance; it shares its ENI's
vSwitch address and security group rules (ECS user guide, elastic-rdma-network-interface-card-eri). The
count per type is the catalog's fabric.interfaces (DescribeInstanceTypes.EriQuantity where published).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from gpufleet.catalog import InstanceType

SecurityGroupId = TypeVar("SecurityGroupId")

STANDARD = "Standard"
HIGH_PERFORMANCE = "HighPerformance"
# Alibaba's rule (ECS user guide, on-the-gpu-instance-configuration-erdma, "Enable Jumbo Frames"): with jumbo frames
# on, NCCL's LL128 protocol needs MTU 8500 on eRDMA; without them the MTU must be 1400; a wrong MTU corrupts data.
# Jumbo frames are an instance setting that ESS scaling configurations and launch templates cannot set (pulumi-alicloud
# 4.0.0: enable_jumbo_frame on ecs.Instance only; shared reference azure-alicloud.md, "Gaps"), so a node of ours has
# none: 1400. The node check asserts it on every eRDMA device's interface (images/nodecheck, erdma_mtu).
ERDMA_MTU = 1400


def eri_count(instance: InstanceType, rdma: bool) -> int:
    """ERIs a node of this type takes: the catalog's count on an eRDMA type with RDMA in use, else 0."""
    return instance.fabric.interfaces if rdma and instance.fabric.kind == "erdma" else 0


def addresses_per_node(instance: InstanceType, rdma: bool) -> int:
    """The primary ENI plus one address per ERI, all from the node's vSwitch."""
    return 1 + eri_count(instance, rdma)


def eri_security_groups(node_group: SecurityGroupId, lanes: Sequence[SecurityGroupId],
                        eris: int) -> list[list[SecurityGroupId]]:
    """The security groups of each of a node's ERIs: the first in the node group alone, ERI k (k >= 2) in the node
    group and lane k's group.

    Why not all in the node group: ess.ScalingConfiguration's network_interfaces is a TypeSet whose elements hash
    over their user-settable fields, instance_type, network_interface_traffic_mode, ipv6_address_count and
    security_group_ids (terraform-provider-alicloud 81c43b672 alicloud/resource_alicloud_ess_scaling_configuration.go
    :117-147, no name or description field); the plugin SDK it builds with (v1.17.2, go.mod:42) hashes a block with
    helper/schema/serialize.go:89-113 and keeps one element per hash (helper/schema/set.go:228-247). Identical ERI
    blocks would leave one ERI per node. Lane k's group holds exactly ERI k of each node, all of them members of the
    node group too, so the extra group changes no reachability."""
    if not eris:
        return []
    assert len(lanes) >= eris - 1, f"{eris} ERIs need {eris - 1} lane security groups, got {len(lanes)}"
    return [[node_group]] + [[node_group, lane] for lane in lanes[: eris - 1]]


# nodegroup.py's security_group_ids beside network_interfaces, read in terraform-provider-alicloud 81c43b672
# alicloud/resource_alicloud_ess_scaling_configuration.go: the schema lets network_interfaces conflict
# with security_group_id only (:120); Create refuses a configuration with neither security_group_id nor
# security_group_ids (:600-604) and sends SecurityGroupIds (:658-660) beside NetworkInterfaces
# (:851-869) in one CreateScalingConfiguration; Update (modifyEssScalingConfiguration :1272-1308) sends
# SecurityGroupIds with NetworkInterfaces whenever security_group_ids is set. So this is the only
# combination the provider creates. ESS's CreateScalingConfiguration and ModifyScalingConfiguration
# references say a call configuring the primary ENI both ways fails; the provider's own acceptance test
# reaches network_interfaces only by creating with security_group_id and removing it in a later update
# (resource_alicloud_ess_scaling_configuration_test.go:1763-1843). Unconfirmed on an account: if ESS
# enforces its reference, this create fails and an ERI group needs a configuration made another way. The
# plan and a real run say so (cluster.py: runtime.warn_unconfirmed, with the text below).
def primary_eni_both_ways(group: str) -> str:
    """What the plan and a real run say of a group whose ERIs need an ESS scaling configuration (nodegroup.py): the
    only create the provider makes configures the primary ENI both ways, which ESS documents as failing."""
    return (f"unconfirmed: the ERIs of group {group} need an ESS scaling configuration, which the alicloud provider "
            "creates only with security_group_ids beside network_interfaces (terraform-provider-alicloud "
            "resource_alicloud_ess_scaling_configuration.go: Create requires a security group and network_interfaces "
            "conflicts with security_group_id); ESS's CreateScalingConfiguration and ModifyScalingConfiguration "
            "references say a call that configures the primary ENI both ways fails. Not yet tried on an account: if "
            "`pulumi up` fails creating the configuration, set this group's rdma: off (no ERIs, a launch template) "
            "until gpufleet creates ERI configurations another way")
