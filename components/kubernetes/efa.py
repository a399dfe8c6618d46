"""The AWS EFA device plugin (manifests/aws-efa-k8s-device-plugin.yaml), on the nodes of EFA groups only.

The chart confines it to the EFA-capable instance types it lists (supportedInstanceLabels); here it goes to the EFA
groups' nodes by their group label (placement.py), so a group of the same type without EFA does not get it (the
plugin exits where no EFA device is attached). The chart's term keeps EKS Auto Mode nodes out.
"""

from __future__ import annotations

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, containers, find, pod_spec, read_manifest
from .model import InClusterGroup
from .placement import add_tolerations, groups_affinity, taint_tolerations

NAME = "aws-efa-k8s-device-plugin"
NOT_AUTO_MODE = {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]}


def efa_groups(groups: tuple[InClusterGroup, ...]) -> tuple[InClusterGroup, ...]:
    return tuple(group for group in groups if group.fabric == "efa")


def efa_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    """The plugin's DaemonSet, or nothing when no group uses EFA."""
    served = efa_groups(groups)
    if not served:
        return []
    objects = read_manifest(NAME).fresh()
    daemonset = find(objects, "DaemonSet", NAME)
    for container in containers(daemonset):
        container["image"] = pins.efa_device_plugin.images[NAME].reference
    spec = pod_spec(daemonset)
    spec["affinity"] = groups_affinity(served, NOT_AUTO_MODE)
    add_tolerations(spec, taint_tolerations(served))
    return objects
