"""Checks only a Kubernetes cluster on Alibaba Cloud (ACK Pro) needs: what its node pools, its driver label, its
GPU sharing component and its RAM principals can take.

An ACK node runs ACK's own node image; the stack's `image` is a lock profile whose `driver` the pool pins with
ack_facts.DRIVER_LABEL: one ACK installs (installed_by: ack, which only ACK clusters take) or a VM profile. ACK
installs a listed version only (another falls back to ACK's default driver: gpufleet/catalog/ack.yaml,
ack-driver-label). That list is dated, so an unlisted driver is a plan warning and a real-run refusal
(gpufleet/plan/support_warnings.py, components/clouds/alicloud/ack_in_cluster.py), not a stack error. GPU sharing
is ack-ai-installer's: memory-isolated (cGPU) and time-slicing (its `share` mode, no isolation) on the families the
catalog lists; MIG is not offered through it (the scheduling labels, ALI doc-detail/191140.html
updated Mar 26, 2026, are default, cgpu, core_mem, share, mps and topology; ACK's MIG page covers ebmgn7 A100 bare
metal on heterogeneous-computing clusters only). eRDMA comes from the ACK eRDMA controller on the types that take ERIs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..catalog.ack import instance_family, load_ack_facts
from .check_registry import check, group_check
from .errors import SpecError
from .scheduler_checks import key_errors, kubernetes_on

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster, ResolvedGroup

# Label and taint namespaces ACK writes itself: the driver pin ack.aliyun.com/nvidia-driver-version (ALI 207292),
# the node pool's alibabacloud.com/nodepool-id, the card-model labels aliyun.accelerator/nvidia_name ... (ALI
# 191140, card model scheduling).
ACK_NAMESPACES = ("ack.aliyun.com", "alibabacloud.com", "aliyun.accelerator")
# ack-ai-installer's node labels, set by gpufleet from gpu_sharing (ack_facts.SCHEDULE_LABEL) or left to ACK.
ACK_GPU_KEYS = frozenset({"ack.node.gpu.schedule", "ack.node.gpu.placement"})


def _on_ack(cluster: ResolvedCluster) -> bool:
    return kubernetes_on(cluster) and cluster.spec.cloud == "alicloud"


@check
def ack_installed_profile_on_ack_only(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A profile whose driver ACK installs (installed_by: ack) has no image: only an ACK node pool, which runs ACK's
    own node image with the driver its label names, can use it."""
    profile = cluster.profile
    if profile is None or profile.baked or _on_ack(cluster):
        return
    baked = ", ".join(sorted(name for name, entry in cluster.lock.profiles.items() if entry.baked))
    yield SpecError("image", f"profile {cluster.spec.image!r} is installed_by: ack: ACK installs its driver on ACK's "
                             "own node image (the node pool's driver label) and gpufleet bakes no image of it, so "
                             "only an ACK cluster (cloud alicloud, scheduler.kind kubernetes) can use it; name a "
                             f"profile gpufleet bakes: {baked}")


@group_check
def mig_not_on_ack(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if _on_ack(cluster) and group.spec.gpu_sharing.mode == "mig":
        yield SpecError(group.path("gpu_sharing.mode"), "ACK's GPU sharing (ack-ai-installer) schedules by the "
                                                        "labels default, cgpu, core_mem, share, mps and topology, none "
                                                        "of them MIG: use memory-isolated (cGPU) or time-slicing, or "
                                                        "none")


@group_check
def sharing_on_ack_families(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    mode = group.spec.gpu_sharing.mode
    if not _on_ack(cluster) or mode != "memory-isolated":
        return
    facts = load_ack_facts()
    for j, row in enumerate(group.types):
        if row is not None and instance_family(row.name) not in facts.cgpu.families:
            yield SpecError(group.path(f"instance_types[{j}]"),
                            f"{row.name}: its family is not one the catalog marks for cGPU memory isolation "
                            f"({', '.join(facts.cgpu.families)}; {facts.source(facts.cgpu)}): use one of them, or "
                            "gpu_sharing.mode time-slicing or none")


@group_check
def erdma_on_ack(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if not _on_ack(cluster) or not group.rdma:
        return
    erdma = load_ack_facts().erdma
    if group.fabric != "erdma":
        # The SCC types' RoCE NICs have no ACK device plugin here: ACK's RDMA for them is Lingjun's (rdma/hca).
        yield SpecError(group.path("rdma"), f"{group.fabric} is not eRDMA: on ACK only the eRDMA controller "
                                            "(aliyun/erdma) is built; use an ERI type (eRDMA) or rdma: off")
    elif not erdma.runs_on(str(cluster.spec.scheduler.version)):
        yield SpecError("scheduler.version", f"the ACK eRDMA controller needs Kubernetes {erdma.min_kubernetes} or "
                                             f"later ({load_ack_facts().source(erdma)})")


def ack_key_problem(key: str) -> str | None:
    """Why ACK keeps a node label or taint key for itself, or None."""
    if key in ACK_GPU_KEYS:
        return ("ack-ai-installer's scheduling label: gpufleet sets ack.node.gpu.schedule from gpu_sharing.mode; "
                "remove it from labels")
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if any(namespace == ns or namespace.endswith("." + ns) for ns in ACK_NAMESPACES):
        return f"{namespace}/ is a namespace ACK writes itself (driver pin, node pool, GPU model); use your own prefix"
    return None


@group_check
def ack_keys_unreserved(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if not _on_ack(cluster):
        return
    yield from key_errors(group, ack_key_problem, ack_key_problem)


@check
def public_endpoint_needs_the_vpc_range(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A public ACK endpoint is limited by a whitelist on the API server's listener that must also hold the VPC's
    range, or kubelets lose the API server (components/clouds/alicloud/api_server_acl.py); gpufleet knows that range
    only for the network it creates."""
    if _on_ack(cluster) and cluster.spec.scheduler.endpoint == "public" and cluster.spec.network.cidr is None:
        yield SpecError("scheduler.endpoint", "public: the API server's whitelist must hold the VPC's range, which "
                                              "gpufleet knows only for a network it creates (network.cidr); use "
                                              "endpoint private with a brought network")


@check
def idle_is_one_autoscaler_setting_on_ack(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """On ACK a group's idle is the cluster autoscaler's unneeded time and GPU threshold
    (components/clouds/alicloud/ack_operations.py), which cs.AutoscalingConfig sets once for every pool."""
    if not _on_ack(cluster):
        return
    idle = [(group.spec.name, group.path("idle"), group.spec.idle) for group in cluster.groups
            if group.spec.idle is not None]
    for _, path, setting in idle[1:]:
        first, _, first_setting = idle[0]
        for field in ("for_minutes", "gpu_util_below"):
            value, first_value = getattr(setting, field), getattr(first_setting, field)
            if value != first_value:
                yield SpecError(f"{path}.{field}", f"{value}: on ACK idle is the cluster autoscaler's setting, one "
                                                   f"value for every node pool; {first} sets {first_value}: give "
                                                   f"every group the same")


@check
def low_latency_not_on_ack(cluster: ResolvedCluster) -> Iterator[SpecError]:
    if _on_ack(cluster) and cluster.spec.low_latency_groups:
        # gpufleet's ACK node pools (one cs.NodePool per group) set no deployment_set_id.
        yield SpecError("low_latency_groups", "LowLatency deployment sets are not built for ACK node pools: remove "
                                              "low_latency_groups from a Kubernetes stack")
