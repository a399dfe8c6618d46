"""One node group's BootstrapConfig from the resolved cluster: the same on every cloud, plus the cloud's own
settings (lifecycle hooks, health endpoint, fabric MTU...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import BootstrapConfig, ExpectedType

if TYPE_CHECKING:
    from gpufleet.resolve import ResolvedCluster, ResolvedGroup


def group_bootstrap(cluster: ResolvedCluster, group: ResolvedGroup, **cloud_settings: Any) -> BootstrapConfig:
    """The lock profile, what the node check expects of each of the group's types, and the stack's storage
    and checkpoint settings; `cloud_settings` (e.g. lifecycle, checkpoint_grace_seconds) override or add."""
    spec = cluster.spec
    profile = cluster.profile
    assert profile is not None, "the spec checks refuse a profile the lock lacks"
    settings: dict[str, Any] = {
        "cloud": spec.cloud,
        "cluster": spec.name,
        "node_group": group.name,
        "image_profile": spec.image,
        "driver": profile.driver,
        "cuda": profile.cuda,
        "fabric_manager": profile.fabric_manager,
        "expected": {
            t.name: ExpectedType(
                gpu_model=t.gpu.model,
                gpu_count=t.gpu.count,
                nvswitch=t.nvswitch,
                fabric=fabric.kind,
                fabric_interfaces=fabric.interfaces,
            )
            for t, fabric in zip(group.types, group.fabrics, strict=True)
            if t is not None
        },
        "scratch": spec.storage.scratch,
        "scratch_mount": spec.storage.scratch_mount,
        "checkpoint_hook": spec.bootstrap.checkpoint_hook,
        "checkpoint_grace_seconds": spec.bootstrap.checkpoint_grace_seconds,
    }
    return BootstrapConfig(**{**settings, **cloud_settings})
