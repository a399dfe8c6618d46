"""The pod templates a plan creates, and those of a job manifest (the shipped examples), each with where it comes
from; and what is left unchecked, with why.

Read: the workloads the pack's rules read (policies/kubernetes/workloads.py: Pod, Deployment, StatefulSet, ReplicaSet,
ReplicationController, DaemonSet, Job, CronJob, MPIJob and PyTorchJob per replica type), and EKS managed
add-ons whose configurationValues place their pods (tolerations, nodeSelector, affinity: the add-on's own defaults
for the rest are EKS's and not in the plan; their requests are not judged).
Not read (each named in the summary with why): operator custom resources (NVIDIADriver, ClusterPolicy,
NicClusterPolicy): the operator renders their pods from its own templates, which are not in the plan; EKS add-ons that
set no placement, ACK's add-ons and the system add-ons AKS and ACK install themselves (CoreDNS among them), whose pod
specs are the cloud's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.kubernetes.workloads import REPLICA_SPECS, WORKLOAD_TYPES, pod_specs, workload_name

from ..record import RecordedResource

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
OPERATOR_GROUPS = ("nvidia.com/", "mellanox.com/")
EKS_ADDON = "aws:eks/addon:Addon"
# The clouds' own in-cluster software: pod specs the cloud renders, none of them in the plan.
CLOUD_MANAGED = {
    "azure-native:containerservice:ManagedCluster": "AKS's system add-ons (CoreDNS, metrics-server, konnectivity)",
    "alicloud:cs/managedKubernetes:ManagedKubernetes": "ACK's default add-ons (CoreDNS, metrics-server among them)",
}
ACK_ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
PLACEMENT = ("tolerations", "nodeSelector", "affinity")


@dataclass(frozen=True)
class PodSource:
    """One pod template: what to call it, its pod spec, whether a DaemonSet runs it, and where it is declared."""

    name: str
    spec: Mapping[str, Any]
    daemon: bool
    origin: str
    """The resource's URN, or the manifest file."""


def object_pods(resource_type: str, obj: Mapping[str, Any], origin: str) -> list[PodSource]:
    """The pod templates of one Kubernetes object of type token `resource_type` ([] for objects that run none), read
    where the pack's rules read them (policies/kubernetes/workloads.py)."""
    if resource_type not in WORKLOAD_TYPES:
        return []
    title = f"{resource_type.rsplit(':', 1)[1]} {workload_name(dict(obj))}"
    if resource_type in REPLICA_SPECS:
        roles = (obj.get("spec") or {}).get(REPLICA_SPECS[resource_type]) or {}
        return [PodSource(f"{title} {role}", replica["template"]["spec"], False, origin)
                for role, replica in roles.items()]
    return [PodSource(title, spec, resource_type == DAEMONSET, origin) for spec in pod_specs(resource_type, dict(obj))]


def plan_pods(resources: Sequence[RecordedResource]) -> tuple[list[PodSource], list[str]]:
    """The pod templates the plan's resources create, and what was not checked (with why)."""
    found: list[PodSource] = []
    unchecked: list[str] = []
    for resource in resources:
        if resource.type.startswith(tuple(f"kubernetes:{group}" for group in OPERATOR_GROUPS)):
            kind = resource.type.rsplit(":", 1)[1]
            unchecked.append(f"{kind} {resource.name}: its operator renders the pods from its own templates")
        elif resource.type.startswith("kubernetes:"):
            found += object_pods(resource.type, resource.inputs, resource.urn)
        elif resource.type == EKS_ADDON:
            found += _addon_pods(resource, unchecked)
        elif resource.type in CLOUD_MANAGED:
            unchecked.append(f"{CLOUD_MANAGED[resource.type]}: the cloud's own pod specs")
            unchecked += [f"ACK add-on {addon['name']}: ACK's own pod spec"
                          for addon in resource.inputs.get("addons") or [] if not addon.get("disabled")]
        elif resource.type == ACK_ADDON:
            unchecked.append(f"ACK add-on {resource.inputs.get('name', resource.name)}: ACK's own pod spec")
    return found, unchecked


def _addon_pods(resource: RecordedResource, unchecked: list[str]) -> list[PodSource]:
    name = resource.inputs.get("addonName", resource.name)
    values = resource.inputs.get("configurationValues")
    placed = json.loads(values) if isinstance(values, str) and values.strip() else {}
    if not any(key in placed for key in PLACEMENT):
        unchecked.append(f"EKS add-on {name}: EKS's own pod spec (the stack sets no placement)")
        return []
    spec = {key: placed[key] for key in PLACEMENT if key in placed}
    return [PodSource(f"EKS add-on {name}", {**spec, "containers": []}, False, resource.urn)]


def manifest_pods(documents: Iterable[Mapping[str, Any] | None], origin: str) -> list[PodSource]:
    """The pod templates of a multi-document manifest (a shipped example job)."""
    return [pod for document in documents if document
            for pod in object_pods(f"kubernetes:{document['apiVersion']}:{document['kind']}", document, origin)]
