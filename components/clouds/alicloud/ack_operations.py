"""Idle scale-down of an ACK cluster's node pools through ACK's cluster autoscaler (cs.AutoscalingConfig, one per
cluster), as on AKS (components/clouds/azure/aks_autoscaler.py): scale-down is on, a node no pod needs goes after
the unneeded time.

ACK's autoscaler judges a node by what its pods request, not by measured load: utilization_threshold and
gpu_utilization_threshold are "the ratio of the resources requested by pods to the total resources on the node", and
a node stays under it for all of unneeded_duration before it is removed, while cool_down_duration only keeps a new
node (ACK API reference CreateAutoscalingConfig, cs 2015-12-15, updated Jul 09, 2026; pulumi-alicloud 4.0.0's
argument text describes the two durations the other way round, the API reference is followed; upstream cluster-
autoscaler's scale-down-unneeded-time and scale-down-gpu-utilization-threshold: kubernetes/autoscaler cluster-
autoscaler/core/scaledown/eligibility/eligibility.go). So a group's idle.for_minutes is the unneeded time and
idle.gpu_util_below the GPU threshold as a share of the node's GPUs requested; the settings are the cluster's, so
every group that sets idle sets the same (gpufleet/stackfile/ack_checks.py idle_is_one_autoscaler_setting_on_ack).
Without idle the autoscaler's defaults apply.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_alicloud as alicloud

from ..scope import ClusterScope

SCALER = "cluster-autoscaler"
# The autoscaler's default unneeded time (cs.AutoscalingConfig unneeded_duration: "Default is 10m").
DEFAULT_UNNEEDED_MINUTES = 10


def autoscaling_config(
    scope: ClusterScope, cluster_id: pulumi.Input[str], pools: Sequence[pulumi.Resource]
) -> alicloud.cs.AutoscalingConfig:
    """The cluster's autoscaler settings, once its pools exist."""
    idle = next((group.spec.idle for group in scope.resolved.groups if group.spec.idle is not None), None)
    return alicloud.cs.AutoscalingConfig(
        f"{scope.name}-autoscaling",
        cluster_id=cluster_id,
        scaler_type=SCALER,
        scale_down_enabled=True,
        unneeded_duration=f"{idle.for_minutes if idle else DEFAULT_UNNEEDED_MINUTES}m",
        gpu_utilization_threshold=f"{idle.gpu_util_below / 100:g}" if idle else None,
        scale_up_from_zero=True,
        # A node leaving waits this long for its pods, as the checkpoint hook has on VM nodes.
        max_graceful_termination_sec=scope.spec.bootstrap.checkpoint_grace_seconds,
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=list(pools))),
    )
