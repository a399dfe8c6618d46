"""Where the in-cluster daemons run: on the node groups' nodes (instance types and the groups' labels) and through
the groups' taints. A daemon that serves GPU nodes must tolerate every taint a group puts on them, or the node's
GPUs (or EFA devices, or metrics) are never advertised."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .model import InClusterGroup

# The well-known label the kubelet sets from the cloud's instance type (Kubernetes "Well-Known Labels, Annotations
# and Taints": node.kubernetes.io/instance-type), on EKS, AKS and ACK alike.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The taint NVIDIA's charts tolerate on GPU nodes (nvidia-device-plugin values.yaml tolerations).
GPU_TAINT_KEY = "nvidia.com/gpu"
# The taint of AKS's system pool (CriticalAddonsOnly=true:NoSchedule, AKS "Manage system node pools"): components
# that need no GPU node tolerate it to run there.
SYSTEM_POOL = {"key": "CriticalAddonsOnly", "operator": "Exists"}


def group_term(group: InClusterGroup, *extra: dict[str, Any]) -> dict[str, Any]:
    """One nodeSelectorTerm that matches the group's nodes: one of its instance types and every label it sets."""
    expressions = [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": sorted(group.instance_types)}]
    expressions += [{"key": key, "operator": "In", "values": [value]} for key, value in sorted(group.labels.items())]
    return {"matchExpressions": [*expressions, *extra]}


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
