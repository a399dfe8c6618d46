"""Idle scale-down of an ACK cluster's node pools through ACK's cluster autoscaler (cs.AutoscalingConfig, one per
cluster).

ACK's autoscaler judges a node idle by what its pods request, not by measured load: utilization_threshold and
gpu_utilization_threshold are "the scale-in threshold" (GPU: "for GPU instance"), a node under it for
unneeded_duration is removed (pulumi-alicloud 4.0.0 cs.AutoscalingConfig argument text; the same fields as upstream
cluster-autoscaler's scale-down-utilization-threshold, requests over allocatable). So a group's `idle` maps to
requested GPUs: gpu_util_below percent of a node's GPUs requested for for_minutes. The settings are the cluster's,
not a pool's: scale-down is on only when every group asks for it (a group without `idle` never scales in on the VM
path), at the strictest of their settings (the lowest threshold, the longest time).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_alicloud as alicloud

from ..scope import ClusterScope

SCALER = "cluster-autoscaler"


def autoscaling_config(
    scope: ClusterScope, cluster_id: pulumi.Input[str], pools: Sequence[pulumi.Resource]
) -> alicloud.cs.AutoscalingConfig:
    """The cluster's autoscaler settings, once its pools exist."""
    idles = [group.spec.idle for group in scope.resolved.groups]
    scale_down = all(idle is not None for idle in idles)
    given = [idle for idle in idles if idle is not None] if scale_down else []
    return alicloud.cs.AutoscalingConfig(
        f"{scope.name}-autoscaling",
        cluster_id=cluster_id,
        scaler_type=SCALER,
        scale_down_enabled=scale_down,
        unneeded_duration=f"{max(i.for_minutes for i in given)}m" if given else None,
        gpu_utilization_threshold=f"{min(i.gpu_util_below for i in given) / 100:g}" if given else None,
        scale_up_from_zero=True,
        # A node leaving waits this long for its pods, as the checkpoint hook has on VM nodes.
        max_graceful_termination_sec=scope.spec.bootstrap.checkpoint_grace_seconds,
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=list(pools))),
    )
