"""Warnings a plan carries about the stack's dated choices: the Kubernetes version's support window, and on AKS a
group's idle threshold that the cluster autoscaler cannot take.

A plan is made on a day; the same stack planned later may be told its version has left standard support. The day
is passed in so a plan (and a test) can fix it.
"""

from __future__ import annotations

from datetime import date

from ..catalog.kubernetes_versions import load_kubernetes_versions
from ..stackfile.models import ClusterSpec


def plan_warnings(spec: ClusterSpec, today: date) -> list[str]:
    """What the plan's table and JSON (summary.warnings) say beside the cost: empty for a VM cluster or a version
    comfortably inside standard support."""
    scheduler = spec.scheduler
    if scheduler.kind != "kubernetes" or scheduler.version is None:
        return []
    version = load_kubernetes_versions().of(spec.cloud, scheduler.version)
    warning = version.support_warning(spec.cloud, today) if version is not None else None
    return [*([f"scheduler.version: {warning}"] if warning else []), *aks_idle_warnings(spec)]


def aks_idle_warnings(spec: ClusterSpec) -> list[str]:
    """On AKS idle.for_minutes is the autoscaler's scale-down-unneeded-time and gpu_util_below has no setting
    (components/clouds/azure/aks_autoscaler.py): say so rather than drop it silently."""
    if spec.cloud != "azure":
        return []
    return [f"node_groups[{i}].idle.gpu_util_below: not applied on AKS: the cluster autoscaler removes a GPU node "
            f"whose pods have requested under its GPU threshold of the node's GPUs for idle.for_minutes "
            f"({group.idle.for_minutes}) and fit elsewhere, whatever the GPUs' measured utilisation"
            for i, group in enumerate(spec.node_groups) if group.idle is not None]
