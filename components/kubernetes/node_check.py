"""The node check before a node takes work, where the node image cannot run it at boot (AKS: no custom image).

A DaemonSet per group runs the project's node check (images/nodecheck) on every node of the groups against the lock's
expectation (the expect.json document the cloud side passes in, the same one a baked node reads from
/etc/gpufleet/expect.json) and, once the node passes, marks its own node (scripts/release_node.py): it sets
NODE_CHECK_LABEL and, where the pool carries it, removes NODE_CHECK_TAINT. A node that fails keeps neither.

Two gates, by what the cloud's pool API lets a pod change:
- Label (AKS): AKS owns a pool's taints and refuses their removal from a node through the Kubernetes API
  (azure-aks-docs use-node-taints.md, "Taints and VM sizes can only be set for node pools during node pool creation";
  Azure/AKS #2934, MicrosoftDocs/azure-aks-docs PR 66: "even using kubectl admission controller will block this"),
  so a startup taint would hold every node for ever. The pools carry no check taint; the device plugin selects
  NODE_CHECK_LABEL (azure.py), so no nvidia.com/gpu is advertised, and no GPU pod lands, before the check passes.
- Taint (ACK): ACK's own device plugin serves the GPUs (alicloud.py), so nothing of ours can be made to wait for a
  label; the pool carries NODE_CHECK_TAINT and the check lifts it. Its key has the cluster autoscaler's startup-taint
  prefix, which the autoscaler leaves off the node template it simulates a scale-up from zero with and treats as
  "about to be ready" (kubernetes/autoscaler cluster-autoscaler/FAQ.md "Startup taints" @55c37cd), so a pending
  GPU pod still scales a pool up from zero.

RBAC: get and patch on nodes, nothing else (Kubernetes RBAC cannot narrow `resourceNames` to the pod's own node;
the script patches only NODE_NAME, guarded by resourceVersion).
The pod reads the host's /sys and /proc read-only (the check's --sysfs-root/--proc-root) and reaches NVML with
NVIDIA_VISIBLE_DEVICES=all: it runs unprivileged. It has no systemd and no fabric manager binary, so on NVSwitch
types it looks for the running fabric manager among the host's processes (--fabric-manager process). Where the GPU
Operator installs the driver (AKS) the pod runs under its NVIDIA runtime class and an init container waits for the
operator's driver validation first (the check needs the driver loaded); where the node's own image carries the
driver and makes the NVIDIA runtime containerd's default (ACK: `host_driver`), neither applies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj
from .model import InClusterGroup
from .placement import GPU_TAINT_KEY, add_tolerations, groups_affinity, taint_tolerations

NODE_CHECK_TAINT = ("startup-taint.cluster-autoscaler.kubernetes.io/gpufleet-node-check", "pending", "NoSchedule")
"""(key, value, effect) of the startup taint an ACK GPU pool carries until its node passes the node check."""
NODE_CHECK_LABEL = ("gpufleet.io/node-check", "passed")
"""(key, value) of the label the node check sets on a node that passed: what the AKS device plugin and DCGM exporter
select (azure.py)."""
NAMESPACE = NAME = "gpufleet-node-check"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
SCRIPT = SCRIPTS / "release_node.py"
KUBE_API = SCRIPTS / "kube_api.py"
"""The Kubernetes API helper the pod scripts import from their own directory (the ConfigMap ships it beside them)."""
# The GPU Operator's validator writes this file once the driver container has loaded the driver (gpu-operator
# assets/state-device-plugin/0500_daemonset.yaml, init container toolkit-validation, waits on the same directory).
DRIVER_READY = "/run/nvidia/validations/driver-ready"


def startup_toleration() -> dict[str, Any]:
    """The toleration of NODE_CHECK_TAINT, for what must run on a node before its check passes (ACK)."""
    key, value, effect = NODE_CHECK_TAINT
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def _taint_text() -> str:
    key, value, effect = NODE_CHECK_TAINT
    return f"{key}={value}:{effect}"


def passed() -> dict[str, Any]:
    """The node selector expression of a node that passed its check."""
    key, value = NODE_CHECK_LABEL
    return {"key": key, "operator": "In", "values": [value]}


def node_check_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents,
                       expectations: Mapping[str, Mapping[str, Any]], *, host_driver: bool = False,
                       startup_taint: bool = False) -> list[Obj]:
    """Namespace and RBAC, then per group its expectation (group name -> expect.json document: a type's MIG layout
    differs between groups) with the release script, and a DaemonSet on the group's nodes. `host_driver`: the node
    image loads the driver and runs containers under the NVIDIA runtime by default (no operator to wait for).
    `startup_taint`: the pools carry NODE_CHECK_TAINT, which the check lifts (ACK); else only the label gates."""
    missing = [group.name for group in groups if group.name not in expectations]
    if missing:
        raise ValueError(f"InClusterArgs.node_check has no expectation for node group(s) {', '.join(missing)}")
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": NAME},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]},
        *(obj for group in groups
          for obj in _group_objects(group, pins, expectations[group.name], host_driver, startup_taint)),
    ]


def _wait_for_operator(spec: dict[str, Any], image: str) -> None:
    """Run under the GPU Operator's runtime class and wait for its driver validation before the check."""
    # NVML through the toolkit's runtime, as the GPU Operator's operands get it (gpu_operator.RUNTIME_CLASS).
    spec["runtimeClassName"] = "nvidia"
    spec["initContainers"].insert(0, {
        "name": "wait-for-driver", "image": image,
        "command": ["sh", "-c", f"until [ -f {DRIVER_READY} ]; do echo waiting for the driver; sleep 5; done"],
        "volumeMounts": [{"name": "run-nvidia", "mountPath": "/run/nvidia", "readOnly": True}]})
    spec["volumes"].append({"name": "run-nvidia", "hostPath": {"path": "/run/nvidia", "type": "DirectoryOrCreate"}})


def _group_objects(group: InClusterGroup, pins: KubernetesComponents, expectation: Mapping[str, Any],
                   host_driver: bool, startup_taint: bool) -> list[Obj]:
    """The group's expectation and release script, and the DaemonSet that checks its nodes."""
    image = pins.node_check.reference
    meta = {"name": f"{NAME}-{group.name}", "namespace": NAMESPACE}
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": group.name}
    gate = [{"name": "NODE_CHECK_LABEL", "value": "=".join(NODE_CHECK_LABEL)},
            *([{"name": "NODE_CHECK_TAINT", "value": _taint_text()}] if startup_taint else [])]
    spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        "priorityClassName": "system-node-critical",
        "affinity": groups_affinity((group,)),
        "initContainers": [
            {"name": "node-check", "image": image,
             "command": ["sh", "-c", "python3 -m images.nodecheck --expect /etc/gpufleet/expect.json "
                         "--sysfs-root /host/sys --proc-root /host/proc --fabric-manager process --format text && "
                         "python3 /etc/gpufleet/release_node.py"],
             "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                     *gate,
                     {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                     {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility,compute"}],
             "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
             "volumeMounts": [{"name": "config", "mountPath": "/etc/gpufleet", "readOnly": True},
                              {"name": "host-sys", "mountPath": "/host/sys", "readOnly": True},
                              {"name": "host-proc", "mountPath": "/host/proc", "readOnly": True}]},
        ],
        # A DaemonSet's pod must keep running: the work is the init containers', this one only holds the slot.
        "containers": [{"name": "passed", "image": image,
                        "command": ["python3", "-c", "import time\nwhile True: time.sleep(3600)"],
                        "resources": {"requests": {"cpu": "1m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}}],
        "volumes": [{"name": "config", "configMap": {"name": meta["name"]}},
                    {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
                    {"name": "host-proc", "hostPath": {"path": "/proc", "type": "Directory"}}],
    }
    if not host_driver:
        _wait_for_operator(spec, image)
    add_tolerations(spec, [*([startup_toleration()] if startup_taint else []),
                           {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                           *taint_tolerations((group,))])
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(meta),
         "data": {"expect.json": json.dumps(dict(expectation), indent=2, sort_keys=True) + "\n",
                  "release_node.py": SCRIPT.read_text(), "kube_api.py": KUBE_API.read_text()}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {**meta, "labels": labels},
         "spec": {"selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": spec}}},
    ]
