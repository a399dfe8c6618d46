"""One ACK node pool (cs.NodePool, an ESS scaling group ACK manages) per node group: its instance types, zones,
autoscaler bounds, spot settings as the VM path's ESS groups take them (nodegroup.py), disks encrypted with the
stack's key, the node security group, ACK's own OS image with the lock profile's driver pinned by label, and the
group's labels and taints. The cluster autoscaler's settings are ack_operations.py's.

Sources (terraform-provider-alicloud @81c43b6, alicloud/resource_alicloud_cs_kubernetes_node_pool.go; the
pulumi-alicloud 4.0.0 cs.NodePool argument text is the same provider's):
- image_type AliyunLinux3: one of the types the schema takes (line 193); ACK installs the NVIDIA driver on it and
  pins a pool's driver by the label ack_facts.DRIVER_LABEL (ALI en/document_detail/207292.html), and the eRDMA
  controller runs on Alibaba Cloud Linux 3 (AliyunContainerService/alibabacloud-erdma-controller README,
  Prerequisites). No image_id: ACK's image, not ours (ack-common.md).
- eRDMA: the controller creates and attaches the ERIs itself (its RAM policy: ecs:CreateNetworkInterface,
  ecs:AttachNetworkInterface; same README), so a pool needs no interface settings; an RDMA group stays in its zone.
- No login: key_name, password and kms_encrypted_password are all optional, and Create sends a key pair or a login
  password only when one is set (lines 1210-1228): nodes are reached through Cloud Assistant, as VM nodes are.
- compensate_with_on_demand takes effect under COST_OPTIMIZED (cs.NodePool argument text); a spot group asks for
  spot above its on-demand base, so a spot shortage is not made up with on-demand nodes (as on the VM path, whose
  ESS groups leave it unset). spot_instance_remedy: ESS starts a replacement when a spot node gets its reclaim notice.
- instance_metadata_options http_tokens required: metadata in hardened mode only, as the VM path's launch templates
  (ACK 1.28 or later, the argument text).
- node_name_mode `customized,<prefix>,ip,<suffix>`: each node is named prefix + its private IP + suffix (the argument
  text; sent as kubernetes_config.node_name_mode, ForceNew: resource_alicloud_cs_kubernetes_node_pool.go:648-653,
  :1735-1737). A pool's nodes are named `<group>-<ip>`, so what reads node names (the ARMS rules, ack_alerts.py) tells
  a pool's nodes by name: ACK's default names (region.ip) say nothing of the pool, and the pool's labels reach
  Prometheus only through kube_node_labels, whose label_* series kube-state-metrics exports only for allowlisted
  label keys.

Scale from zero: ACK runs the cluster autoscaler itself. The node check's startup taint carries the autoscaler's
startup-taint prefix, which the autoscaler leaves off the template node it simulates a scale-up with (kubernetes/
autoscaler @55c37cd cluster-autoscaler/FAQ.md, "Startup taints"), so it never keeps a pod from scaling a pool up.
What ACK does not allow: declaring an extended resource on a pool's template. The upstream Alibaba Cloud provider
builds the template's capacity from the instance type only (pods, CPU, memory, nvidia.com/gpu:
cloudprovider/alicloud/alicloud_manager.go:213-239) and turns the scaling configuration's tags into labels, not
resources; ACK documents no setting for one. So a pod that asks for aliyun/erdma does not scale an eRDMA pool up from
zero; keep such a pool's size.min at the job's node count, or let pods ask for GPUs first. Whether ACK's own
autoscaler honours the startup-taint prefix is unconfirmed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from components.kubernetes.pool_nodes import group_labels, group_taints
from components.kubernetes.terway_whitelist import terway_config_label
from gpufleet.clouds.alicloud.ack_facts import DRIVER_LABEL, SCHEDULE_LABEL, SHARING_SCHEDULE
from gpufleet.clouds.backend import ResolvedGroup

from ..scope import ClusterScope
from .ack_operations import autoscaling_config
from .nodegroup import DISK_CATEGORY, SPOT_POOLS, spot_strategy

IMAGE_TYPE = "AliyunLinux3"
# Node names: "<group>-" then the private IPv4 address (digits and dots); group names end in a letter or digit.
NODE_IP = "[0-9.]+"
# A change to any of these makes a new pool: security_group_ids cannot be modified (cs.NodePool argument text).
POOL_CREATION_ONLY = ["securityGroupIds"]


@dataclass(frozen=True)
class AckPoolArgs:
    cluster_id: pulumi.Output[str]
    vswitch_ids: dict[str, pulumi.Output[str]]  # zone -> vSwitch (ClusterNetwork.vswitch_ids)
    security_group_id: pulumi.Output[str]
    key_id: pulumi.Output[str]  # the stack's KMS key
    contact_group: pulumi.Input[str] | None  # alarm target (create_alarm_target's result)


def node_name_prefix(group_name: str) -> str:
    """What every node name of the group's pool starts with, its private IP following."""
    return f"{group_name}-"


def pool_fabric(group: ResolvedGroup) -> str:
    """The fabric a pool's nodes are labelled with: eRDMA where the group uses it."""
    return "erdma" if group.rdma and group.fabric == "erdma" else "none"


def pool_labels(group: ResolvedGroup, driver: str) -> dict[str, str]:
    """The stack's labels, gpufleet's placement and sharing labels, the driver pin, for a sharing group
    ack-ai-installer's scheduling label and for an eRDMA group Terway's ENI whitelist (terway_whitelist.py)."""
    ack = {DRIVER_LABEL: driver, **(terway_config_label() if pool_fabric(group) == "erdma" else {})}
    schedule = SHARING_SCHEDULE.get(group.spec.gpu_sharing.mode)
    if schedule is not None:
        ack[SCHEDULE_LABEL] = schedule
    return group_labels(group, pool_fabric(group), ack)


def pool_taints(group: ResolvedGroup) -> tuple[tuple[str, str, str], ...]:
    """The stack's taints, the GPU taint and the node check's startup taint, which the check lifts (ACK's device
    plugin is ACK's, so nothing of ours could wait for a label instead: components/kubernetes/node_check.py)."""
    return group_taints(group, startup_taint=True)


def _spot(group: ResolvedGroup) -> Mapping[str, object]:
    """The ESS spot settings of the pool's scaling group, as nodegroup.py's scaling groups take them."""
    spec = group.spec
    strategy = spot_strategy(spec)
    if not spec.spot:
        return {"spot_strategy": strategy, "multi_az_policy": "PRIORITY"}
    return {
        "spot_strategy": strategy,
        "spot_price_limits": [
            alicloud.cs.NodePoolSpotPriceLimitArgs(instance_type=name, price_limit=f"{spec.spot_max_price:g}")
            for name in spec.instance_types
        ] if strategy == "SpotWithPriceLimit" else None,
        # COST_OPTIMIZED is the only policy under which ESS honours the on-demand base and spot settings.
        "multi_az_policy": "COST_OPTIMIZED",
        "on_demand_base_capacity": str(spec.on_demand_base),
        "on_demand_percentage_above_base_capacity": "0",
        "spot_instance_pools": SPOT_POOLS,
        "spot_instance_remedy": True,
        "compensate_with_on_demand": False,
    }


def node_pool(scope: ClusterScope, group: ResolvedGroup, args: AckPoolArgs, driver: str) -> alicloud.cs.NodePool:
    """The group's pool, autoscaled between its min and max."""
    spec = group.spec
    return alicloud.cs.NodePool(
        f"{scope.name}-{spec.name}",
        cluster_id=args.cluster_id,
        node_pool_name=spec.name,
        type="ess",
        instance_types=list(spec.instance_types),
        vswitch_ids=[args.vswitch_ids[zone] for zone in group.zones],
        scaling_config=alicloud.cs.NodePoolScalingConfigArgs(
            enable=True, min_size=spec.size.min, max_size=spec.size.max, is_bond_eip=False,
        ),
        **_spot(group),
        security_group_ids=[args.security_group_id],
        image_type=IMAGE_TYPE,
        system_disk_category=DISK_CATEGORY,
        system_disk_size=scope.spec.storage.root_volume_gb,
        system_disk_encrypted=True,
        system_disk_kms_key=args.key_id,
        internet_max_bandwidth_out=0,
        instance_metadata_options=alicloud.cs.NodePoolInstanceMetadataOptionsArgs(http_tokens="required"),
        install_cloud_monitor=True,
        node_name_mode=f"customized,{node_name_prefix(spec.name)},ip,",
        labels=[alicloud.cs.NodePoolLabelArgs(key=k, value=v) for k, v in pool_labels(group, driver).items()],
        taints=[alicloud.cs.NodePoolTaintArgs(key=k, value=v, effect=e) for k, v, e in pool_taints(group)],
        tags=scope.tags,
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(replace_on_changes=POOL_CREATION_ONLY)),
    )


def ack_pools(scope: ClusterScope, args: AckPoolArgs) -> dict[str, alicloud.cs.NodePool]:
    """One node pool per node group (by group name), with its autoscaling, alarms and labels/taints."""
    profile = scope.resolved.profile
    assert profile is not None, "the spec check makes sure the lock has the stack's profile"
    pools = {group.name: node_pool(scope, group, args, profile.driver) for group in scope.resolved.groups}
    autoscaling_config(scope, args.cluster_id, list(pools.values()))
    return pools
