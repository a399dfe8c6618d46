"""The NVIDIA Network Operator on AKS InfiniBand groups: its NicClusterPolicy runs the DOCA driver container (the
MOFED that the GPU Operator's nvidia-peermem builds against, driver.rdma.enabled) and the RDMA shared device plugin
that advertises `rdma/ib` and mounts the node's InfiniBand HCAs into a pod that asks for one (NCCL then uses all of
them; pods still need IPC_LOCK).

As Azure/aks-rdma-infiniband configures it (configs/nicclusterpolicy/base/nic.yaml and rdma-shared-device-plugin/
rdma.yaml @700dabb: DOCA driver doca3.2.0-25.10-1.2.8.0-2 with its OFED_BLACKLIST_MODULES_FILE workaround, upgrade
policy and probes; plugin network-operator-v25.10.0 selecting vendor 15b3 with link type infiniband), so the
accelerated-networking NIC (an mlx5 with link type ether) is never handed to pods. Two changes: the resource is
named `ib` (IBR's `shared_ib`), and the policy's node affinity is the InfiniBand groups' nodes.

The operator's DaemonSets also select feature.node.kubernetes.io/pci-15b3.present=true (Mellanox/network-operator
v25.10.0 manifests/state-ofed-driver/0050_ofed-driver-ds.yaml:268, state-rdma-shared-device-plugin/
0060_rdma-shared-dev-plugin-ds.yaml:121), which NFD's default PCI whitelist never sets for a NIC (source/pci/pci.go
newDefaultConfig: classes 03, 0b40, 12): without a rule the policy deploys nothing. mellanox_rule is
Azure/aks-rdma-infiniband tests/setup-infra/network-operator-nfd.yaml's (pci.device 101c or 101e, the ConnectX-6 and
ConnectX-7 virtual functions of the ND InfiniBand HCAs) with the vendor matched too (device ids are per vendor). NFD's
master applies it (its CRD and the rule are created with the node-feature-discovery component, azure.py).
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, find, pod_spec, read_manifest
from .model import InClusterGroup
from .placement import GPU_TAINT_KEY, SYSTEM_POOL, add_tolerations, groups_affinity, taint_tolerations

NAMESPACE = "nvidia-network-operator"
RESOURCE = "rdma/ib"  # the plugin's resource prefix `rdma` and the resource name below
HCA_MAX = 63  # how many pods may share one node's HCAs (IBR's rdmaHcaMax): the rdma/ib a node advertises
MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
IB_VIRTUAL_FUNCTIONS = ["101c", "101e"]  # IBR's rule: ConnectX-6 and ConnectX-7 VFs
PLUGIN_CONFIG = {"configList": [{"resourceName": "ib", "rdmaHcaMax": HCA_MAX,
                                 "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}}]}
# The operator appends -<os><version>-<arch> to the DOCA driver's version (IBR nic.yaml's comment), but not to a
# digest (doca_version); the lock pins the full tag a node pulls.
ARCH = "amd64"


def infiniband_groups(groups: tuple[InClusterGroup, ...]) -> tuple[InClusterGroup, ...]:
    return tuple(group for group in groups if group.fabric == "infiniband")


def _parts(reference: str) -> tuple[str, str, str]:
    """(repository, image, tag) of `repository/image:tag[@digest]` (the policy names images by these fields)."""
    name = reference.partition("@")[0]
    path, _, tag = name.rpartition(":")
    repository, _, image = path.rpartition("/")
    return repository, image, tag


def doca_version(pins: KubernetesComponents, os_suffix: str) -> str:
    """The NicClusterPolicy's ofedDriver.version: the lock's digest when it pins the tag these nodes pull, else the
    pinned tag without the OS and arch suffix the operator adds.

    With a version starting with sha256 the operator pulls `repository/image@version` and appends no suffix, ahead
    of any precompiled tag (Mellanox/network-operator v25.10.0 pkg/state/state_ofed.go:76 sha256ImageFormat, :622
    isSha256, :749-757 getMofedDriverImageName; its webhook accepts the form, api/v1alpha1/validator/
    nicclusterpolicy_webhook.go:717-718). The digest is that of the `-<os_suffix>-amd64` tag, so every node of the
    policy must run that OS on amd64: the InfiniBand groups on AKS do (ARCH), and a tag for another OS keeps the
    tag form, which unpinned_pulls refuses."""
    pin = pins.network_operator.images["doca-driver"]
    suffix = f"-{os_suffix}-{ARCH}"
    if pin.digest and pin.image.endswith(suffix):
        return pin.digest
    return _parts(pin.image)[2].removesuffix(suffix)


def plugin_version(pins: KubernetesComponents) -> str:
    """rdmaSharedDevicePlugin.version: the digest where the lock has one (the operator's template pulls
    imagePath(repository, image, version), `@` for a sha256: version: pkg/render/render.go:106-111 and
    manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml:43 at v25.10.0), else the tag."""
    pin = pins.network_operator.images["k8s-rdma-shared-dev-plugin"]
    return pin.digest or _parts(pin.image)[2]


def unpinned_pulls(pins: KubernetesComponents, os_suffix: str) -> list[str]:
    """Reasons a real run refuses for the images the operator pulls on InfiniBand nodes (in no pod spec of ours)."""
    images = pins.network_operator.images
    found = []
    doca = images["doca-driver"]
    if not doca.image.endswith(f"-{os_suffix}-{ARCH}"):
        found.append(f"{doca.image}: nodes of this Kubernetes version run {os_suffix}; pin the doca-driver tag for it")
    found += [f"{pin.image}: {pin.unconfirmed}" for key, pin in images.items()
              if key != "network-operator" and pin.digest is None]
    return found


def mellanox_rule() -> Obj:
    """The NodeFeatureRule that labels a node with InfiniBand HCAs for the operator's DaemonSets."""
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": "gpufleet-mellanox-infiniband"},
            "spec": {"rules": [{"name": "mellanox infiniband hca", "labels": {MELLANOX_LABEL: "true"},
                                "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
                                    "vendor": {"op": "In", "value": ["15b3"]},
                                    "device": {"op": "In", "value": IB_VIRTUAL_FUNCTIONS}}}]}]}}


def nic_cluster_policy(ib: tuple[InClusterGroup, ...], pins: KubernetesComponents, os_suffix: str) -> Obj:
    tolerations: list[dict[str, Any]] = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                                         *taint_tolerations(ib)]
    doca_repository, doca_image, _ = _parts(pins.network_operator.images["doca-driver"].image)
    plugin = _parts(pins.network_operator.images["k8s-rdma-shared-dev-plugin"].image)
    probe = {"startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
             "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
             "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30}}
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy"},
            "spec": {"nodeAffinity": groups_affinity(ib)["nodeAffinity"], "tolerations": tolerations,
                     "ofedDriver": {
                         "repository": doca_repository, "image": doca_image,
                         "version": doca_version(pins, os_suffix),
                         # IBR's workaround for the module-load race (Mellanox/doca-driver-build#52)
                         "env": [{"name": "OFED_BLACKLIST_MODULES_FILE",
                                  "value": "/host/etc/modprobe.d/blacklist-ofed-modules.conf"}],
                         "forcePrecompiled": False,
                         "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1,
                                           "drain": {"enable": True, "force": True, "deleteEmptyDir": True,
                                                     "timeoutSeconds": 300}},
                         **probe},
                     "rdmaSharedDevicePlugin": {
                         "repository": plugin[0], "image": plugin[1], "version": plugin_version(pins),
                         "config": json.dumps(PLUGIN_CONFIG, indent=2) + "\n"}}}


def network_operator_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents,
                             os_suffix: str) -> list[Obj]:
    """Namespace, CRDs, RBAC, the operator and its NicClusterPolicy; nothing without an InfiniBand group."""
    ib = infiniband_groups(groups)
    if not ib:
        return []
    objects = read_manifest("network-operator").fresh()
    deployment = find(objects, "Deployment", "network-operator")
    (container,) = pod_spec(deployment)["containers"]
    container["image"] = pins.network_operator.images["network-operator"].reference
    # The operator runs on the system pool (AKS taints it CriticalAddonsOnly=true:NoSchedule).
    add_tolerations(pod_spec(deployment), [SYSTEM_POOL])
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [namespace, *objects, nic_cluster_policy(ib, pins, os_suffix)]
