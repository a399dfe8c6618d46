"""What an ACK cluster runs inside itself: only what ACK does not put on its GPU nodes, the node check.

What ACK runs itself (so the shared layer's copies are not run, a second one would conflict or duplicate):
- The driver, installed at node initialisation at the pool label's version (ack_facts.DRIVER_LABEL; ALI
  en/document_detail/207292.html), with the NVIDIA runtime as containerd's default: a container with
  NVIDIA_VISIBLE_DEVICES reaches the node's GPUs (ACK GPU FAQ, "Failed to initialize NVML: Unknown Error").
- The device plugin: ack-nvidia-device-plugin, installed with every cluster, a static pod on 1.20-1.31 and from 1.32
  the kube-system DaemonSet on nodes labelled ack.node.gpu.schedule=default, a label ACK's node script sets on GPU
  nodes (ACK "Configure and manage the NVIDIA Device Plugin", help/en/ack/ack-managed-and-ack-dedicated/user-guide/
  gpu-device-plugin-related-operations). NVIDIA's plugin would register nvidia.com/gpu on the same kubelet socket,
  so it is not run, nor GPU feature discovery with it.
- Shared GPUs: ack-ai-installer's device plugin and scheduler extension serve nodes whose ack.node.gpu.schedule is
  the group's sharing value (ack_facts.SHARING_SCHEDULE, set by the pools); such nodes leave ACK's whole-GPU plugin
  (its selector is `default`). The shared layer's time-slicing config is not used on ACK.
- GPU metrics: ack-gpu-exporter, which Managed Service for Prometheus's GPU monitoring deploys (ACK "GPU
  monitoring"; the ack-arms-prometheus add-on is the cloud side's), so the DCGM exporter is not run.
- node-feature-discovery: nothing on ACK reads its labels (no GPU Operator places a driver by them).
- eRDMA: the ACK eRDMA Controller add-on (the cloud side's) registers each node's eRDMA devices as the extended
  resource ERDMA_RESOURCE, which a pod requests in its limits (ACK "Use eRDMA to accelerate container networks",
  help/en/ack/ack-managed-and-ack-dedicated/user-guide/use-erdma-in-ack-clusters); Terway's ENI whitelist on the
  eRDMA nodes keeps Terway off the controller's interfaces (terway_whitelist.py).

What ACK lacks: a drain on the spot release notice (spot_drain.py), and a check of each node against the lock
before it takes work. ACK's device plugin is ACK's, so nothing here can wait for a label: the pools carry
NODE_CHECK_TAINT (with the autoscaler's startup-taint prefix) and the node check DaemonSet per group lifts it
(node_check.py), reading the driver the node's image loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj
from .model import InClusterGroup
from .node_check import node_check_objects
from .spot_drain import spot_drain_objects
from .terway_whitelist import terway_whitelist_objects

ERDMA_RESOURCE = "aliyun/erdma"
"""The extended resource the ACK eRDMA Controller's agent registers: one per eRDMA device a pod gets."""


def alicloud_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents, driver: str | None,
                     expectation: Mapping[str, Mapping[str, Any]] | None) -> list[tuple[str, list[Obj]]]:
    """The ACK components: the node check on every group's nodes, the drain on the spot groups' nodes, Terway's
    ENI whitelist for the eRDMA groups' nodes."""
    if driver:
        raise ValueError("InClusterArgs.driver is set: ACK installs the driver the pool label "
                         "ack.aliyun.com/nvidia-driver-version names, nothing in the cluster installs one")
    if not expectation:
        raise ValueError("InClusterArgs.node_check is empty: ACK nodes run the node check from a DaemonSet, which "
                         "reads the lock's expectation (the expect.json document) from it")
    return [("node-check", node_check_objects(groups, pins, expectation, host_driver=True,
                                                startup_taint=True)),
            ("spot-drain", spot_drain_objects(groups, pins)),
            ("terway-erdma-whitelist", terway_whitelist_objects(groups))]
