"""The pod templates a plan creates, and those of a job manifest (the shipped examples), each with where it comes
from; and what is left unchecked, with why.

Read: Deployment, StatefulSet, ReplicaSet, DaemonSet and Job (spec.template), CronJob (spec.jobTemplate.spec.template),
bare Pods, Kubeflow jobs (spec.<kind>ReplicaSpecs.<role>.template: MPIJob, PyTorchJob, TFJob...), and EKS managed
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

from ..record import RecordedResource

WORKLOADS = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"}
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


def _kind(resource_type: str) -> tuple[str, str]:
    """(api group/version, kind) of a kubernetes:<group/version>:<Kind> resource type."""
    _, version, kind = resource_type.split(":", 2)
    return version, kind


def object_pods(obj: Mapping[str, Any], origin: str) -> list[PodSource]:
    """The pod templates of one Kubernetes object ([] for objects that run no pod)."""
    kind, metadata, spec = obj.get("kind"), obj.get("metadata") or {}, obj.get("spec") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    title = f"{kind} {where}{metadata.get('name', '')}"
    if kind in WORKLOADS:
        return [PodSource(title, spec["template"]["spec"], kind == "DaemonSet", origin)]
    if kind == "CronJob":
        return [PodSource(title, spec["jobTemplate"]["spec"]["template"]["spec"], False, origin)]
    if kind == "Pod":
        return [PodSource(title, spec, False, origin)]
    replicas = [(key, value) for key, value in spec.items() if key.endswith("ReplicaSpecs") and isinstance(value, dict)]
    return [PodSource(f"{title} {role}", role_spec["template"]["spec"], False, origin)
            for _, roles in replicas for role, role_spec in roles.items()]


def plan_pods(resources: Sequence[RecordedResource]) -> tuple[list[PodSource], list[str]]:
    """The pod templates the plan's resources create, and what was not checked (with why)."""
    found: list[PodSource] = []
    unchecked: list[str] = []
    for resource in resources:
        if resource.type.startswith("kubernetes:") and resource.custom and resource.type.count(":") == 2:
            version, kind = _kind(resource.type)
            if version.startswith(OPERATOR_GROUPS):
                unchecked.append(f"{kind} {resource.name}: its operator renders the pods from its own templates")
                continue
            found += object_pods({**resource.inputs, "kind": kind}, resource.urn)
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
    return [pod for document in documents if document for pod in object_pods(document, origin)]
