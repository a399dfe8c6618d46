"""What a managed node pool's nodes carry on every cloud that builds pools from a group (AKS, ACK): gpufleet's
placement labels, the group's sharing labels and its taints, with the GPU taint and the node check's startup taint.

Labels: the stack's, gpufleet.io/group and gpufleet.io/fabric (as EKS's kubelets set them, components/clouds/aws/
eks_nodes.py), the device plugin's sharing labels (gpu_sharing.py) and whatever the cloud adds (ACK's driver pin);
a stack label with one of those keys is refused naming the field. Taints: the stack's, nvidia.com/gpu=present:
NoSchedule unless the stack taints nvidia.com/gpu itself (placement.GPU_TAINT_KEY), and on clouds whose pools may
carry a taint a pod lifts (ACK, not AKS: node_check.py), NODE_CHECK_TAINT, which the node-check DaemonSet lifts once
the node passes."""

from __future__ import annotations

from collections.abc import Mapping

from gpufleet.clouds.backend import ResolvedGroup

from .gpu_sharing import GroupSharing, sharing_labels
from .node_check import NODE_CHECK_TAINT
from .placement import GPU_TAINT_KEY, GROUP_LABEL

FABRIC_LABEL = "gpufleet.io/fabric"
GPU_TAINT = (GPU_TAINT_KEY, "present", "NoSchedule")


def gpus_per_node(group: ResolvedGroup) -> int:
    if group.primary is None:
        raise ValueError(f"{group.path('instance_types')}: {group.spec.instance_types[0]} is not in the catalog, so "
                         "its GPUs per node are unknown")
    return group.primary.gpu.count


def sharing_of(group: ResolvedGroup) -> GroupSharing:
    sharing = group.spec.gpu_sharing
    return GroupSharing(group.spec.name, tuple(group.spec.instance_types), gpus_per_node(group), sharing.mode,
                        sharing.mig_profile, sharing.replicas)


def group_labels(group: ResolvedGroup, fabric: str, cloud: Mapping[str, str] | None = None) -> dict[str, str]:
    """The stack's labels, gpufleet's placement and sharing labels, and the cloud's own (`cloud`)."""
    labels = {GROUP_LABEL: group.spec.name, FABRIC_LABEL: fabric, **sharing_labels(sharing_of(group)), **(cloud or {})}
    clash = sorted(set(labels) & set(group.spec.labels))
    if clash:
        raise ValueError(f"{group.path('labels')}: {', '.join(clash)} are set by gpufleet; remove them")
    return {**group.spec.labels, **labels}


def group_taints(group: ResolvedGroup, *, startup_taint: bool) -> tuple[tuple[str, str, str], ...]:
    """The stack's taints, the GPU taint unless the stack taints nvidia.com/gpu itself, and with `startup_taint` the
    node check's."""
    taints = tuple((t.key, t.value, t.effect) for t in group.spec.taints)
    gpu = () if any(key == GPU_TAINT[0] for key, _, _ in taints) else (GPU_TAINT,)
    return (*taints, *gpu, *((NODE_CHECK_TAINT,) if startup_taint else ()))
