"""A node group's user data on Azure: the VM bootstrap (components.bootstrap) with the cloud's settings (terminate
notice, GPU metrics, NCCL), the shared file system's mount once it exists, and with Slurm the join once the head node
does."""

from __future__ import annotations

from dataclasses import replace

import pulumi

from gpufleet.clouds.backend import ResolvedGroup

from ...bootstrap import render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...bootstrap.operations import GpuMetrics, SharedMount
from ..scope import ClusterScope
from .cluster_parts import SharedFileSystem
from .identity import METRICS_NAMESPACE
from .lifecycle import HEALTH_PORT, TerminateNotice, node_check_retry_seconds
from .nccl import nccl_family
from .shared_storage import FILESYSTEM_NAME
from .slurm_head import LONGEST_ADDRESS, SlurmHead, join_user_data


def group_user_data(
    scope: ClusterScope, resolved_group: ResolvedGroup, notice: TerminateNotice, shared: SharedFileSystem | None,
    head: SlurmHead | None,
) -> pulumi.Input[str]:
    """The group's cloud-init; with a shared file system, rendered once its address is known; with Slurm, the join
    once the head node's address is."""
    return join_user_data(scope.resolved, resolved_group, _vm_user_data(scope, resolved_group, notice, shared), head)


def _vm_user_data(
    scope: ClusterScope, resolved_group: ResolvedGroup, notice: TerminateNotice, shared: SharedFileSystem | None
) -> pulumi.Input[str]:
    """The group's VM bootstrap; with a shared file system, rendered once its address is known."""
    spec = scope.spec
    bootstrap = group_bootstrap(
        scope.resolved,
        resolved_group,
        # The checkpoint must end before Azure deletes a Regular VM (the terminate notice).
        checkpoint_grace_seconds=min(spec.bootstrap.checkpoint_grace_seconds, notice.seconds),
        health_port=HEALTH_PORT,
        node_check_retry_seconds=node_check_retry_seconds(resolved_group.spec.gpu_sharing.mode == "mig"),
        gpu_metrics=GpuMetrics(METRICS_NAMESPACE, resolved_group.names["scaling_group"], spec.region)
        if spec.monitoring.gpu_metrics
        else None,
        nccl_family=nccl_family(resolved_group.primary.name, resolved_group.rdma) if resolved_group.primary else None,
    )
    user_data = render_user_data(bootstrap)
    if shared is None or spec.storage.shared is None:
        return user_data
    render_user_data(replace(bootstrap, shared_mount=SharedMount(
        LONGEST_ADDRESS, FILESYSTEM_NAME, spec.storage.shared.mount)))
    return shared.mount.apply(lambda mount: render_user_data(replace(bootstrap, shared_mount=mount)))
