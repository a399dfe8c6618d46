"""Where the in-cluster daemons run: on the node groups' nodes, found by the group label the stack sets on every
cloud, and through the groups' taints. A daemon that serves GPU nodes must tolerate every taint a group puts on
them, or the node's GPUs (or EFA devices, or metrics) are never advertised.

Only the group label selects, never the stack's own labels, instance types or sharing labels: a node keeps the
labels it registered with until it is replaced (instance_refresh none by default), so an affinity that followed an
edited label, a changed fallback type or a new MIG profile would take the device plugin off the group's running
nodes, and their GPUs with it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .model import InClusterGroup

# The label every node of a group carries, set by the stack (EKS: the kubelet's --node-labels, eks_nodes.py; AKS
# and ACK: the pool's labels, pool_nodes.py); the stack checks refuse any stack label under gpufleet.io/
# (gpufleet/stackfile/scheduler_checks.py).
GROUP_LABEL = "gpufleet.io/group"
# The well-known label the kubelet sets from the cloud's instance type (Kubernetes "Well-Known Labels, Annotations
# and Taints": node.kubernetes.io/instance-type), on EKS, AKS and ACK alike.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The taint NVIDIA's charts tolerate on GPU nodes (nvidia-device-plugin values.yaml tolerations).
GPU_TAINT_KEY = "nvidia.com/gpu"
# The taint of AKS's system pool (CriticalAddonsOnly=true:NoSchedule, AKS "Manage system node pools"): components
# that need no GPU node tolerate it to run there.
SYSTEM_POOL = {"key": "CriticalAddonsOnly", "operator": "Exists"}


def group_term(group: InClusterGroup, *extra: dict[str, Any]) -> dict[str, Any]:
    """One nodeSelectorTerm that matches the group's nodes: by the group label alone (see the module's note)."""
    return {"matchExpressions": [{"key": GROUP_LABEL, "operator": "In", "values": [group.name]}, *extra]}


def groups_affinity(groups: Iterable[InClusterGroup], *extra: dict[str, Any]) -> dict[str, Any]:
    """A required node affinity onto the nodes of any of the groups (terms are ORed, a term's expressions ANDed)."""
    terms = [group_term(group, *extra) for group in groups]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def taint_tolerations(groups: Iterable[InClusterGroup]) -> list[dict[str, Any]]:
    """A toleration for each distinct taint of the groups (Equal with its value; Exists where the taint has none)."""
    found: list[dict[str, Any]] = []
    for group in groups:
        for key, value, effect in group.taints:
            toleration = ({"key": key, "operator": "Equal", "value": value, "effect": effect} if value
                          else {"key": key, "operator": "Exists", "effect": effect})
            if toleration not in found:
                found.append(toleration)
    return found


def add_tolerations(spec: dict[str, Any], tolerations: Iterable[dict[str, Any]]) -> None:
    """Append to a pod spec's tolerations those it does not carry yet."""
    current = spec.setdefault("tolerations", [])
    current += [toleration for toleration in tolerations if toleration not in current]
