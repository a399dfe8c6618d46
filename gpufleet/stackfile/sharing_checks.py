"""Checks of `node_groups[].gpu_sharing` against the catalog's MIG facts and the group's fabric.

MIG: every type of the group (fallbacks too) has a GPU with MIG and offers the profile, with the same MIG devices
on every type (one boot layout and one device-plugin resource per group). Neither MIG nor time-slicing on a group
that uses RDMA: such a group exists for multi-node NCCL, and MIG devices have no NCCL or P2P path (NVIDIA GPU
Operator docs, gpu-operator-mig.html; EKS user guide ml/device-management-nvidia-mig.adoc), while time-slicing hands
one GPU to several ranks at once. Time-slicing is the Kubernetes device plugin's: without `scheduler: kubernetes`
nothing would apply it. memory-isolated is Alibaba Cloud's cGPU, installed by ACK's ack-ai-installer: only an ACK
cluster has it (its per-type limits are checked in ack_checks.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..catalog.mig import load_mig_facts
from .check_registry import group_check
from .errors import SpecError

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster, ResolvedGroup


# Clouds whose nodes cannot take MIG at boot yet, and why. A MIG node reboots once on its first boot (the mode
# change waits for a GPU reset: components/bootstrap/mig.py); Alibaba Cloud admits a new node through the scale-out
# gate that Cloud Assistant runs on it (components/bootstrap/gate.py), and whether that invocation outlives a reboot
# is not documented: a gate that fails would have ESS release every new MIG node, one after the other.
MIG_AT_BOOT_GAPS = {
    "alicloud": "a MIG node reboots once on its first boot, and the scale-out gate Cloud Assistant runs on it is not "
    "known to survive a reboot",
}


def _scheduler_kind(cluster: ResolvedCluster) -> str:
    """The cluster's scheduler kind; `none` where the stack model has no scheduler."""
    scheduler = getattr(cluster.spec, "scheduler", None)
    return str(getattr(scheduler, "kind", "none"))


@group_check
def sharing_off_rdma(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    mode = group.spec.gpu_sharing.mode
    if mode == "none" or not group.rdma:
        return
    why = ("NCCL does not run over MIG devices (no NCCL or P2P path between them)" if mode == "mig"
           else f"{mode} puts several ranks on one GPU")
    yield SpecError(
        group.path("gpu_sharing.mode"),
        f"{mode} on a group that uses RDMA ({group.fabric}): {why}; set rdma: off on this group, or keep whole "
        "GPUs (mode: none) for multi-node training",
    )


@group_check
def time_slicing_on_kubernetes(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if group.spec.gpu_sharing.mode == "time-slicing" and _scheduler_kind(cluster) != "kubernetes":
        yield SpecError(
            group.path("gpu_sharing.mode"),
            "time-slicing is done by the Kubernetes device plugin and needs scheduler.kind: kubernetes; on VM "
            "nodes use mig, or none",
        )


@group_check
def memory_isolated_on_ack(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if group.spec.gpu_sharing.mode != "memory-isolated":
        return
    if cluster.spec.cloud != "alicloud" or _scheduler_kind(cluster) != "kubernetes":
        yield SpecError(
            group.path("gpu_sharing.mode"),
            "memory-isolated is Alibaba Cloud's cGPU, installed by ACK's ack-ai-installer: it needs cloud alicloud "
            "with scheduler.kind: kubernetes; elsewhere use mig (isolated partitions) or, on Kubernetes, time-slicing",
        )


@group_check
def mig_built_on_the_cloud(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    gap = MIG_AT_BOOT_GAPS.get(cluster.spec.cloud)
    # The gap is the VM path's scale-out gate; ACK's own MIG verdict is ack_checks.mig_not_on_ack.
    if group.spec.gpu_sharing.mode == "mig" and gap and _scheduler_kind(cluster) != "kubernetes":
        yield SpecError(group.path("gpu_sharing.mode"), f"mig is not built on {cluster.spec.cloud} yet: {gap}")


@group_check
def mig_profile_offered(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    sharing = group.spec.gpu_sharing
    if sharing.mode != "mig" or sharing.mig_profile is None:
        return
    profile, facts = sharing.mig_profile, load_mig_facts()
    layouts: dict[str, dict[str, int]] = {}
    for j, row in enumerate(group.types):
        if row is None:
            continue  # instance_types_known reports it
        gpu = facts.of(row.gpu)
        name = f"{row.name}'s {row.gpu.model} ({row.gpu.memory_gb:g} GB)"
        if gpu is None or not gpu.mig:
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"{name} does not support MIG ({gpu.source if gpu else 'no MIG facts in the catalog'}); use a type "
                "with A100, A30, H100, H200 or B200 GPUs, or gpu_sharing.mode none",
            )
            continue
        devices = gpu.devices(profile)
        if devices is None:
            yield SpecError(
                group.path("gpu_sharing.mig_profile"),
                f"{name} does not offer {profile}; it offers {', '.join(sorted(gpu.profiles))}"
                + (f" (instance_types[{j}])" if j else ""),
            )
            continue
        layouts[row.name] = devices
    if len({tuple(d.items()) for d in layouts.values()}) > 1:
        shown = "; ".join(f"{t}: {_layout(d)}" for t, d in layouts.items())
        yield SpecError(
            group.path("gpu_sharing.mig_profile"),
            f"{profile} makes different MIG devices on the group's types ({shown}): every node of a group must "
            "offer the same devices; give the types groups of their own",
        )


def _layout(devices: dict[str, int]) -> str:
    return " + ".join(f"{n}x {p}" for p, n in devices.items())
