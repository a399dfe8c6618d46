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
Versions per Kubernetes minor in gpufleet/catalog/ack_addons.yaml: no source this project could read pins one, so each
is null there: the plan shows it, a real run refuses (refuse_unpinned_addons), as components/kubernetes/pins.py does
for images.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.catalog.managed_addons import addon_config_problems, load_ack_addons, resolved_kubernetes_version
from gpufleet.clouds.backend import ResolvedCluster

from ... import runtime

TERWAY = "terway-eniip"
TERWAY_CONTROLPLANE = "terway-controlplane"
ERDMA_CONTROLLER = "ack-erdma-controller"
AI_INSTALLER = "ack-ai-installer"
ARMS_PROMETHEUS = "ack-arms-prometheus"
ERDMA_CONFIG = {"agent": {"preferDriver": "ofed", "allocateAllDevices": True}}


def version(minor: str, addon: str) -> str | None:
    """The add-on's pinned version for the cluster's Kubernetes minor (None: not pinned, a real run refuses)."""
    return load_ack_addons().for_minor(minor)[addon].version


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
    """A real run stops before any resource while an add-on it installs has no pinned version, or the cluster's full
    Kubernetes version was not read."""
    minor = resolved.spec.scheduler.version or ""
    why = load_ack_addons().unpinned(minor, addons_in_use(resolved))
    if resolved_kubernetes_version("ack", minor) is None:
        why = (f"{why}; " if why else "") + (
            f"scheduler.version {minor}: ACK's full version for it was not read (ACK stores 1.N.x-aliyun.n, so a "
            "minor would diff on every later `up`): run `gpufleet lock resolve --only addons`")
    if why:
        runtime.refuse_unread(why)


def create_addons(minor: str) -> list[alicloud.cs.ManagedKubernetesAddonArgs]:
    """The add-ons of the cluster's create request: Terway's control plane and its shared-ENI data plane."""
    return [alicloud.cs.ManagedKubernetesAddonArgs(name=name, version=version(minor, name), disabled=False)
            for name in (TERWAY_CONTROLPLANE, TERWAY)]


def cluster_addons(name: str, resolved: ResolvedCluster, cluster_id: pulumi.Input[str],
                   erdma_role: pulumi.Resource | None, opts: pulumi.ResourceOptions
                   ) -> list[alicloud.cs.KubernetesAddon]:
    """The eRDMA controller (after its RRSA role), ack-ai-installer and ack-arms-prometheus, where the cluster's
    groups and monitoring need them."""
    addons, minor = [], resolved.spec.scheduler.version or ""
    if erdma_in_use(resolved):
        if problems := addon_config_problems("ack", minor, ERDMA_CONTROLLER, ERDMA_CONFIG):
            raise pulumi.RunError(f"{ERDMA_CONTROLLER} config {json.dumps(ERDMA_CONFIG, sort_keys=True)} does not fit "
                                  f"the schema ACK lists for its version (images/lock.resolved.yaml): "
                                  f"{'; '.join(problems)}")
        addons.append(alicloud.cs.KubernetesAddon(
            f"{name}-{ERDMA_CONTROLLER}", cluster_id=cluster_id, name=ERDMA_CONTROLLER,
            version=version(minor, ERDMA_CONTROLLER), config=json.dumps(ERDMA_CONFIG, sort_keys=True),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                depends_on=[erdma_role] if erdma_role is not None else []))))
    if sharing_in_use(resolved):
        addons.append(alicloud.cs.KubernetesAddon(
            f"{name}-{AI_INSTALLER}", cluster_id=cluster_id, name=AI_INSTALLER, version=version(minor, AI_INSTALLER),
            opts=opts))
    if metrics_in_use(resolved):
        addons.append(alicloud.cs.KubernetesAddon(
            f"{name}-{ARMS_PROMETHEUS}", cluster_id=cluster_id, name=ARMS_PROMETHEUS,
            version=version(minor, ARMS_PROMETHEUS), opts=opts))
    return addons
