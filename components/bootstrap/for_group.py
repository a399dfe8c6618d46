"""One node group's BootstrapConfig from the resolved cluster: the same on every cloud, plus the cloud's own
settings (lifecycle hooks, health endpoint, fabric MTU...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.slurm.site import CONFIGLESS_CONF_DIR
from components.slurm.spot_leave import render_spot_leave
from gpufleet.catalog import load_mig_facts

from .config import BootstrapConfig, ExpectedType
from .mig import MigLayout

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup


def group_bootstrap(cluster: ResolvedCluster, group: ResolvedGroup, **cloud_settings: Any) -> BootstrapConfig:
    """The lock profile, what the node check expects of each of the group's types, and the stack's storage
    and checkpoint settings; `cloud_settings` (e.g. lifecycle, checkpoint_grace_seconds) override or add."""
    spec = cluster.spec
    profile = cluster.profile
    assert profile is not None, "the spec checks refuse a profile the lock lacks"
    mig = mig_layout(group)
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
                mig_devices=mig.per_gpu if mig else 0,
            )
            for t, fabric in zip(group.types, group.fabrics, strict=True)
            if t is not None
        },
        "scratch": spec.storage.scratch,
        "scratch_mount": spec.storage.scratch_mount,
        "checkpoint_hook": spec.bootstrap.checkpoint_hook,
        "checkpoint_grace_seconds": spec.bootstrap.checkpoint_grace_seconds,
        "mig": mig,
        "slurm_leave": render_spot_leave(CONFIGLESS_CONF_DIR) if spec.scheduler.kind == "slurm" else None,
    }
    return BootstrapConfig(**{**settings, **cloud_settings})


def node_check_expectations(cluster: ResolvedCluster) -> dict[str, dict[str, Any]]:
    """Per node group, the expect.json its nodes are checked against where a DaemonSet runs the node check (AKS,
    ACK): the document a VM node's bootstrap writes (the lock's versions, each type's GPUs, fabric and MIG layout)."""
    from .cloud_init import expect_document

    return {group.name: expect_document(group_bootstrap(cluster, group)) for group in cluster.groups}


def mig_layout(group: ResolvedGroup) -> MigLayout | None:
    """The MIG devices the group's nodes create on each GPU; None for whole GPUs. The stack checks
    (gpufleet/stackfile/sharing_checks.py) have made sure every type of the group makes the same ones."""
    sharing = group.spec.gpu_sharing
    primary = group.primary
    if sharing.mode != "mig" or sharing.mig_profile is None or primary is None:
        return None
    facts = load_mig_facts().of(primary.gpu)
    devices = facts.devices(sharing.mig_profile) if facts else None
    return MigLayout(sharing.mig_profile, devices) if devices else None
