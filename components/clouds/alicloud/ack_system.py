"""The ACK system group (scheduler.system_group): a node pool of small on-demand CPU nodes with no taint, where
CoreDNS, the operators, the cluster autoscaler and job launchers run, so the first deploy never waits on GPU capacity
and the GPU pools may start at 0.

Like the GPU pools (ack_pools.py; terraform-provider-alicloud @81c43b6 resource_alicloud_cs_kubernetes_node_pool.go):
ACK's Alibaba Cloud Linux 3 image, disks on the stack key, no login, metadata in hardened mode, the node security
group; on-demand only (spot_strategy NoSpot), spread over every zone of the cluster's vSwitches, autoscaled between
the system group's min and max. No driver label and no GPU taint: nothing GPU runs here.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.stackfile.scheduler import SYSTEM_GROUP_NAME, SYSTEM_NODE_LABELS

from ..scope import ClusterScope
from .ack_pools import IMAGE_TYPE, POOL_CREATION_ONLY, AckPoolArgs
from .nodegroup import DISK_CATEGORY

ROOT_GB = 50


def system_pool(scope: ClusterScope, args: AckPoolArgs) -> alicloud.cs.NodePool:
    """The system group's pool on every zone's vSwitch."""
    system, found = scope.spec.scheduler.system_group, scope.resolved.system_type
    assert found is not None, "system_group_type_in_catalog refuses an unknown type"
    return alicloud.cs.NodePool(
        f"{scope.name}-{SYSTEM_GROUP_NAME}",
        cluster_id=args.cluster_id,
        node_pool_name=SYSTEM_GROUP_NAME,
        type="ess",
        instance_types=[found[0]],
        vswitch_ids=[args.vswitch_ids[zone] for zone in scope.spec.network.zones],
        scaling_config=alicloud.cs.NodePoolScalingConfigArgs(
            enable=True, min_size=system.size.min, max_size=system.size.max, is_bond_eip=False),
        spot_strategy="NoSpot",
        multi_az_policy="BALANCE",
        security_group_ids=[args.security_group_id],
        image_type=IMAGE_TYPE,
        system_disk_category=DISK_CATEGORY,
        system_disk_size=ROOT_GB,
        system_disk_encrypted=True,
        system_disk_kms_key=args.key_id,
        internet_max_bandwidth_out=0,
        instance_metadata_options=alicloud.cs.NodePoolInstanceMetadataOptionsArgs(http_tokens="required"),
        install_cloud_monitor=True,
        labels=[alicloud.cs.NodePoolLabelArgs(key=key, value=value) for key, value in SYSTEM_NODE_LABELS.items()],
        tags=scope.tags,
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(replace_on_changes=POOL_CREATION_ONLY)),
    )
