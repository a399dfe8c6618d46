"""The NVIDIA device plugin with GPU feature discovery, and the node-feature-discovery release they need.

From the rendered chart (manifests/nvidia-device-plugin.yaml) and NFD's default overlay
(manifests/node-feature-discovery.yaml). Set here: the pinned image; the chart's ConfigMap holds the default config
(whole GPUs) and one per node group that shares its GPUs, which each node picks by the label its group carries
(gpu_sharing.config_map_data, gpu_sharing.sharing_labels: the cloud side puts the labels on the nodes); an
affinity onto the groups' nodes in place of the chart's NFD-label affinity (the plugin need not wait for NFD's
labels); the groups' taints tolerated by the daemons that must run on their nodes.
"""

from __future__ import annotations

import hashlib
import json

from gpufleet.lock.kubernetes_components import KubernetesComponents

from . import gpu_sharing
from .manifests import Obj, containers, find, pod_spec, read_manifest
from .model import InClusterGroup
from .placement import add_tolerations, groups_affinity, taint_tolerations

NAMESPACE = "nvidia-device-plugin"
CONFIG_MAP = "nvdp-nvidia-device-plugin-configs"
DAEMONSETS = ("nvdp-nvidia-device-plugin", "nvdp-nvidia-device-plugin-gpu-feature-discovery")


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def device_plugin_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    """The device plugin and GPU feature discovery, with their namespace (the chart's `--create-namespace`)."""
    objects = read_manifest("nvidia-device-plugin").fresh()
    image = pins.nvidia_device_plugin.images["k8s-device-plugin"].reference
    config_map = find(objects, "ConfigMap", CONFIG_MAP)
    config_map["data"] = gpu_sharing.config_map_data(groups)
    # Rolls the daemons when a group's config changes, as the chart's checksum/config annotation does.
    checksum = hashlib.sha256(json.dumps(config_map["data"], sort_keys=True).encode()).hexdigest()
    for name in DAEMONSETS:
        daemonset = find(objects, "DaemonSet", name)
        for container in containers(daemonset):
            container["image"] = image
        daemonset["spec"]["template"]["metadata"]["annotations"]["checksum/config"] = checksum
        spec = pod_spec(daemonset)
        spec["affinity"] = groups_affinity(groups)
        add_tolerations(spec, taint_tolerations(groups))
    return [_namespace(NAMESPACE), *objects]


def nfd_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    """node-feature-discovery as its default overlay renders it (namespace, CRDs, RBAC, master, worker, gc)."""
    objects = read_manifest("node-feature-discovery").fresh()
    image = pins.node_feature_discovery.images["node-feature-discovery"].reference
    for obj in objects:
        if "template" in obj.get("spec", {}):
            for container in containers(obj):
                container["image"] = image
    # Every NFD pod tolerates the groups' taints: the worker reads the feature files GPU feature discovery writes on
    # the GPU nodes, and the master and gc have no other nodes to run on (the cluster has no system group).
    for obj in objects:
        if "template" in obj.get("spec", {}):
            add_tolerations(pod_spec(obj), taint_tolerations(groups))
    return objects

