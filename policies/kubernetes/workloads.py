"""Where a Kubernetes resource keeps its pod specs, per type token, so every rule reads pods the same way.

Built-in workloads keep one pod template (a CronJob one level deeper); the job operators' custom resources keep
one per replica type (MPI Operator v2beta1 MPIJob `mpiReplicaSpecs`, Training Operator v1 PyTorchJob
`pytorchReplicaSpecs`).
"""

from __future__ import annotations

from typing import Any

from ..props import get

POD = "kubernetes:core/v1:Pod"
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template", "spec"),
    "kubernetes:core/v1:ReplicationController": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
REPLICA_SPECS = {
    "kubernetes:kubeflow.org/v2beta1:MPIJob": "mpiReplicaSpecs",
    "kubernetes:kubeflow.org/v1:PyTorchJob": "pytorchReplicaSpecs",
}
WORKLOAD_TYPES: tuple[str, ...] = (POD, *TEMPLATE_PATHS, *REPLICA_SPECS)


def pod_specs(resource_type: str, props: dict[str, Any]) -> list[dict[str, Any]]:
    """The known pod specs of a workload (unknown ones left out: rules judge only what they can see)."""
    if resource_type == POD:
        found = [get(props, "spec")]
    elif resource_type in TEMPLATE_PATHS:
        found = [get(props, *TEMPLATE_PATHS[resource_type])]
    else:
        replicas = get(props, "spec", REPLICA_SPECS[resource_type])
        found = [get(spec, "template", "spec") for spec in replicas.values()] if isinstance(replicas, dict) else []
    return [spec for spec in found if isinstance(spec, dict)]


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container of a pod spec: init, regular and ephemeral."""
    found: list[dict[str, Any]] = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        listed = spec.get(key)
        if isinstance(listed, list):
            found += [container for container in listed if isinstance(container, dict)]
    return found


def workload_name(props: dict[str, Any]) -> str:
    """`namespace/name` of the object (namespace `default` where it names none, as the API server files it)."""
    namespace = get(props, "metadata", "namespace")
    name = get(props, "metadata", "name")
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    return f"{namespace}/{name if isinstance(name, str) and name else '(unnamed)'}"
