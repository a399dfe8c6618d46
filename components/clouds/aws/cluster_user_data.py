"""A node group's user data on AWS: the VM bootstrap (components.bootstrap) with the cloud's settings (lifecycle hooks,
GPU metrics), the shared file system's mount once it exists, and with Slurm the join once the head node does."""

from __future__ import annotations

from dataclasses import replace

import pulumi

from gpufleet.clouds.backend import ResolvedGroup

from ...bootstrap.added_files import gzip_user_data
from ...bootstrap.cloud_init import render_cloud_config
from ...bootstrap.for_group import group_bootstrap
from ...bootstrap.operations import GpuMetrics, SharedMount
from ..hooks import GroupHooks
from ..scope import ClusterScope
from .cluster_parts import SharedFileSystem, SlurmHead
from .identity import METRICS_NAMESPACE
from .lifecycle import node_check_retry_seconds
from .nodegroup_args import USER_DATA_REMEDY
from .slurm_head import node_user_data


def group_user_data(
    scope: ClusterScope, resolved_group: ResolvedGroup, hooks: GroupHooks, shared: SharedFileSystem | None,
    head: SlurmHead | None,
) -> pulumi.Input[str]:
    """The group's cloud-init; with a shared file system, rendered once it is known; with Slurm, the join once the
    head node's address is."""
    user_data = vm_user_data(scope, resolved_group, hooks, shared)
    if head is None:
        return user_data
    return pulumi.Output.all(user_data, head.address, head.secret_arn).apply(
        lambda v: node_user_data(scope.resolved, resolved_group, v[0], v[1], v[2]))


def vm_user_data(
    scope: ClusterScope, resolved_group: ResolvedGroup, hooks: GroupHooks, shared: SharedFileSystem | None
) -> pulumi.Input[str]:
    """The group's VM bootstrap; with a shared file system, rendered once it is known."""
    spec = scope.spec
    hooked = resolved_group.spec.provisioner == "autoscaling"
    scaling_group = resolved_group.names["scaling_group"]
    bootstrap = group_bootstrap(
        scope.resolved,
        resolved_group,
        checkpoint_grace_seconds=hooks.terminate.heartbeat_timeout,
        lifecycle=hooks.for_node(spec.region, scaling_group) if hooked else None,
        node_check_retry_seconds=node_check_retry_seconds(resolved_group.spec.gpu_sharing.mode == "mig")
        if hooked
        else 0,
        gpu_metrics=GpuMetrics(METRICS_NAMESPACE, scaling_group, spec.region) if spec.monitoring.gpu_metrics else None,
    )
    # EC2 takes the cloud-config gzipped (launch_user_data): checked here, before any resource, at its gzipped size.
    if shared is None or spec.storage.shared is None:
        return _within_limit(render_cloud_config(bootstrap), resolved_group)
    # The mount needs the file system's DNS and mount names, known once it exists; rendering once with names of
    # their full length first reports a user data over the limit before any resource.
    _within_limit(render_cloud_config(replace(bootstrap, shared_mount=SharedMount(
        f"fs-{'0' * 17}.fsx.{spec.region}.amazonaws.com", "0" * 8, spec.storage.shared.mount))), resolved_group)
    return shared.mount.apply(lambda mount: render_cloud_config(replace(bootstrap, shared_mount=mount)))


def _within_limit(text: str, resolved_group: ResolvedGroup) -> str:
    gzip_user_data(text, "aws", f"node group {resolved_group.name}", USER_DATA_REMEDY)
    return text
