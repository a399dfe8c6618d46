"""Warnings a plan carries about the stack's dated choices and what a managed cluster cannot do: the Kubernetes
version's support window; on ACK a driver its documented list (gpufleet/catalog/ack.yaml, read on a date) does not
name, and a public endpoint's minutes before its whitelist; on AKS a group's idle threshold the cluster autoscaler
has no setting for; on Azure a shared file system's key whose near expiry nobody would hear.

A plan is made on a day; the same stack planned later may be told its version has left standard support. The day
is passed in so a plan (and a test) can fix it.
"""

from __future__ import annotations

from datetime import date

from ..catalog.ack import load_ack_facts
from ..catalog.kubernetes_versions import load_kubernetes_versions
from ..resolve import ResolvedCluster
from ..stackfile.models import ClusterSpec


def plan_warnings(spec: ClusterSpec, today: date, driver: str | None = None) -> list[str]:
    """What the plan's table and JSON (summary.warnings) say beside the cost: empty for a VM cluster, a version
    comfortably inside standard support and (ACK) a `driver` ACK's list names."""
    scheduler = spec.scheduler
    if scheduler.kind != "kubernetes" or scheduler.version is None:
        return []
    version = load_kubernetes_versions().of(spec.cloud, scheduler.version)
    warning = version.support_warning(spec.cloud, today) if version is not None else None
    warnings = [*([f"scheduler.version: {warning}"] if warning else []), *aks_idle_warnings(spec)]
    if spec.cloud == "alicloud" and driver is not None and (unlisted := load_ack_facts().unlisted_driver(driver)):
        warnings.append(f"image: {unlisted}")
    if spec.cloud == "alicloud" and scheduler.endpoint == "public":
        # components/clouds/alicloud/api_server_acl.py: the binding needs the cluster, whose create opens the EIP.
        warnings.append("scheduler.endpoint: public on ACK answers every address from the cluster's creation until "
                        "the whitelist of public_cidrs is bound to its API server (minutes; callers still need "
                        "credentials)")
    return warnings


def aks_idle_warnings(spec: ClusterSpec) -> list[str]:
    """On AKS idle.for_minutes is the autoscaler's scale-down-unneeded-time and gpu_util_below has no setting
    (components/clouds/azure/aks_autoscaler.py): say so rather than drop it silently."""
    if spec.cloud != "azure":
        return []
    return [f"node_groups[{i}].idle.gpu_util_below: not applied on AKS: the cluster autoscaler removes a GPU node "
            f"whose pods have requested under its GPU threshold of the node's GPUs for idle.for_minutes "
            f"({group.idle.for_minutes}) and fit elsewhere, whatever the GPUs' measured utilisation"
            for i, group in enumerate(spec.node_groups) if group.idle is not None]


def unheard_key_expiry(resolved: ResolvedCluster) -> list[str]:
    """Azure Managed Lustre on a created key: its near-expiry event goes to the stack's action group
    (components/clouds/azure/key_expiry.py); a stack with none is told that nobody hears it."""
    spec = resolved.spec
    if spec.cloud != "azure" or spec.storage.shared is None or spec.storage.kms_key != "create":
        return []
    if resolved.alarm_target_mode is not None:
        return []
    return ["storage.shared: nobody is told when the file system's key version nears expiry (Key Vault's "
            "KeyNearExpiry event, 30 days ahead, is routed to an action group only): set monitoring.alarms, or "
            "watch the key's expiry yourself; the file system stops when its key version expires"]
