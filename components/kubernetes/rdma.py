"""The RDMA shared device plugin on InfiniBand groups (manifests/rdma-shared-device-plugin.yaml): it advertises
`rdma/ib` on each node and mounts the node's InfiniBand HCAs into a pod that asks for one (NCCL then uses all of
them). The selector takes vendor 15b3 with link type infiniband only, as Azure/aks-rdma-infiniband configures the
network operator's copy of this plugin (configs/nicclusterpolicy/rdma-shared-device-plugin/rdma.yaml@700dabb):
the accelerated-networking NIC (an mlx5 with link type ether) is never handed to pods. Pods still need IPC_LOCK.

The standalone plugin, not the network operator's NicClusterPolicy wrapping it. Not here yet: the DOCA driver
container IBR runs through the NicClusterPolicy (ofedDriver doca-driver, configs/nicclusterpolicy/base/nic.yaml),
which the GPU Operator's nvidia-peermem (driver.rdma.enabled, useHostMofed false) waits for on InfiniBand nodes.
"""

from __future__ import annotations

import json

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, containers, find, pod_spec, read_manifest
from .model import InClusterGroup
from .node_check import NODE_CHECK_TAINT
from .placement import GPU_TAINT_KEY, add_tolerations, groups_affinity, taint_tolerations

NAME = "rdma-shared-dp-ds"
RESOURCE = "rdma/ib"  # the plugin's default resource prefix `rdma` and the resource name below
# How many pods may share one node's HCAs (IBR's rdmaHcaMax).
HCA_MAX = 63
CONFIG = {"periodicUpdateInterval": 300,
          "configList": [{"resourceName": "ib", "rdmaHcaMax": HCA_MAX,
                          "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}}]}


def infiniband_groups(groups: tuple[InClusterGroup, ...]) -> tuple[InClusterGroup, ...]:
    return tuple(group for group in groups if group.fabric == "infiniband")


def rdma_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    """The plugin's ConfigMap and DaemonSet on the InfiniBand groups' nodes; nothing without such a group."""
    ib = infiniband_groups(groups)
    if not ib:
        return []
    objects = read_manifest("rdma-shared-device-plugin").fresh()
    find(objects, "ConfigMap", "rdma-devices")["data"] = {"config.json": json.dumps(CONFIG, indent=2) + "\n"}
    daemonset = find(objects, "DaemonSet", NAME)
    for container in containers(daemonset):
        container["image"] = pins.rdma_shared_device_plugin.images["k8s-rdma-shared-dev-plugin"].reference
    spec = pod_spec(daemonset)
    spec["affinity"] = groups_affinity(ib)
    key, value, effect = NODE_CHECK_TAINT
    # The node check counts the HCAs the kernel shows, not this plugin's: the plugin runs through the check's taint.
    add_tolerations(spec, [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                           {"key": key, "operator": "Equal", "value": value, "effect": effect},
                           *taint_tolerations(ib)])
    return objects
