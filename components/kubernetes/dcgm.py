"""NVIDIA's DCGM exporter (manifests/dcgm-exporter.yaml): GPU metrics on :9400 of every GPU node.

The static manifest names no namespace and no placement: here it gets its own namespace, an affinity onto the
groups' nodes and the tolerations those nodes need (the GPU taint and the groups' taints).
"""

from __future__ import annotations

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, containers, find, pod_spec, read_manifest
from .model import InClusterGroup
from .placement import GPU_TAINT_KEY, add_tolerations, groups_affinity, taint_tolerations

NAMESPACE = "dcgm-exporter"
NAME = "dcgm-exporter"


def dcgm_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    objects = read_manifest(NAME).fresh()
    for obj in objects:
        obj["metadata"]["namespace"] = NAMESPACE
    daemonset = find(objects, "DaemonSet", NAME)
    for container in containers(daemonset):
        container["image"] = pins.dcgm_exporter.images[NAME].reference
    spec = pod_spec(daemonset)
    spec["affinity"] = groups_affinity(groups)
    add_tolerations(spec, [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                           *taint_tolerations(groups)])
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, *objects]
