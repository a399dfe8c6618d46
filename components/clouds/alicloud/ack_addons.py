"""ACK add-ons: the network plugin in the cluster's create request, the rest as cs.KubernetesAddon resources.

`addons` of ManagedKubernetes "only works for Create", later add-ons are cs.KubernetesAddon (pulumi-alicloud 4.0.0
text of both); the provider treats terway / terway-eni / terway-eniip / kube-flannel-ds as the network add-ons
(aliyun/terraform-provider-alicloud @81c43b6 alicloud/service_alicloud_cs.go:69), which only a create installs.
- terway-eniip (shared-ENI Terway, what eRDMA's container networking runs beside: ACKD use-erdma-in-ack-clusters asks
  for a Terway ENI whitelist) and terway-controlplane (ACK Pro runs Terway's control plane managed; both named in
  public CreateCluster requests for eRDMA clusters).
- ack-erdma-controller on a cluster with an eRDMA group: its add-on id is the one ack-ram-tool registers
  (pkg/ctl/rrsa/setupaddon/addon/ack-erdma-controller.go @c786909); config `{"agent": {"preferDriver": "ofed",
  "allocateAllDevices": true}}`: the OFED driver for GPU (NCCL) workloads (ACKD use-erdma-in-ack-clusters), every
  eRDMA device of the node given to it. It calls ECS with its RRSA role (ack_rrsa.py), created first.
- ack-ai-installer on a cluster with any GPU-sharing group (ALI doc-detail/191140.html: cGPU and shared scheduling).
- ack-arms-prometheus on a cluster with monitoring.gpu_metrics: connects the cluster to Managed Service for
  Prometheus (ARMS) and runs ACK's GPU exporter, whose series the pools' alert rules read (ack_alerts.py); drivers
  570 and later need ack-arms-prometheus 1.1.33 or later with ack-gpu-exporter 2.3.0 or later (ACK driver list,
  ALI en/document_detail/207292.html), which a real run's pin must meet. No config: the add-on's defaults.
- No logging add-on: control-plane logs are collected by the managed control plane (ack.py).
Versions: no source this project can cite pins one, so each is null: the plan shows it, a real run refuses
(refuse_unpinned_addons), as components/kubernetes/pins.py does for images.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.resolve import ResolvedCluster

from ... import runtime

TERWAY = "terway-eniip"
TERWAY_CONTROLPLANE = "terway-controlplane"
ERDMA_CONTROLLER = "ack-erdma-controller"
AI_INSTALLER = "ack-ai-installer"
ARMS_PROMETHEUS = "ack-arms-prometheus"
ERDMA_CONFIG = {"agent": {"preferDriver": "ofed", "allocateAllDevices": True}}
# add-on -> its pinned version; None: no citable version yet (a real run refuses).
VERSIONS: Mapping[str, str | None] = MappingProxyType({
    TERWAY: None,
    TERWAY_CONTROLPLANE: None,
    ERDMA_CONTROLLER: None,
    AI_INSTALLER: None,
    ARMS_PROMETHEUS: None,
})


def erdma_in_use(resolved: ResolvedCluster) -> bool:
    return any(group.rdma for group in resolved.groups)


def sharing_in_use(resolved: ResolvedCluster) -> bool:
    return any(group.spec.gpu_sharing.mode != "none" for group in resolved.groups)


def metrics_in_use(resolved: ResolvedCluster) -> bool:
    return resolved.spec.monitoring.gpu_metrics


def addons_in_use(resolved: ResolvedCluster) -> list[str]:
    """The add-ons this cluster installs, in the order it installs them."""
    return [TERWAY_CONTROLPLANE, TERWAY, *([ERDMA_CONTROLLER] if erdma_in_use(resolved) else []),
            *([AI_INSTALLER] if sharing_in_use(resolved) else []),
            *([ARMS_PROMETHEUS] if metrics_in_use(resolved) else [])]


def refuse_unpinned_addons(resolved: ResolvedCluster) -> None:
    """A real run stops before any resource while an add-on it installs has no pinned version."""
    unpinned = [name for name in addons_in_use(resolved) if VERSIONS[name] is None]
    if unpinned and not runtime.running_offline():
        raise pulumi.RunError(
            f"ACK add-on versions not pinned: {', '.join(unpinned)} (components/clouds/alicloud/ack_addons.py "
            "VERSIONS); pin each from the add-on's release notes before a real run")


def create_addons() -> list[alicloud.cs.ManagedKubernetesAddonArgs]:
    """The add-ons of the cluster's create request: Terway's control plane and its shared-ENI data plane."""
    return [alicloud.cs.ManagedKubernetesAddonArgs(name=name, version=VERSIONS[name], disabled=False)
            for name in (TERWAY_CONTROLPLANE, TERWAY)]


def cluster_addons(name: str, resolved: ResolvedCluster, cluster_id: pulumi.Input[str],
                   erdma_role: pulumi.Resource | None, opts: pulumi.ResourceOptions
                   ) -> list[alicloud.cs.KubernetesAddon]:
    """The eRDMA controller (after its RRSA role), ack-ai-installer and ack-arms-prometheus, where the cluster's
    groups and monitoring need them."""
    addons = []
    if erdma_in_use(resolved):
        addons.append(alicloud.cs.KubernetesAddon(
            f"{name}-{ERDMA_CONTROLLER}", cluster_id=cluster_id, name=ERDMA_CONTROLLER,
            version=VERSIONS[ERDMA_CONTROLLER], config=json.dumps(ERDMA_CONFIG, sort_keys=True),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                depends_on=[erdma_role] if erdma_role is not None else []))))
    if sharing_in_use(resolved):
        addons.append(alicloud.cs.KubernetesAddon(
            f"{name}-{AI_INSTALLER}", cluster_id=cluster_id, name=AI_INSTALLER, version=VERSIONS[AI_INSTALLER],
            opts=opts))
    if metrics_in_use(resolved):
        addons.append(alicloud.cs.KubernetesAddon(
            f"{name}-{ARMS_PROMETHEUS}", cluster_id=cluster_id, name=ARMS_PROMETHEUS,
            version=VERSIONS[ARMS_PROMETHEUS], opts=opts))
    return addons
