"""Spot nodes on ACK drained on the release notice, before Alibaba reclaims them.

No ACK component found drains a node on the notice: ack-node-problem-detector only sets the condition InstanceExpired
(ALI doc-detail/294455.htm) and a pool's spot_instance_remedy only starts a replacement. So a DaemonSet on the nodes
of each spot group runs scripts/drain_on_notice.py: it polls the instance metadata's spot termination time (through
the node's own network, as the VM nodes' spot watcher reads it) and, once ECS announces the release, cordons its node
and evicts its pods through the Eviction API, as the node termination handler does on EKS. On-demand nodes of a
mixed group are never announced and only poll.

RBAC: nodes get and patch (the cordon), pods list and pods/eviction create; Kubernetes RBAC cannot narrow them to
the pod's own node. The image is the node check's (python3 and the standard library are all the script needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj
from .model import InClusterGroup
from .node_check import KUBE_API, startup_toleration
from .placement import GPU_TAINT_KEY, add_tolerations, groups_affinity, taint_tolerations
from .termination_handler import spot_groups

NAMESPACE = NAME = "gpufleet-spot-drain"
SCRIPT = Path(__file__).resolve().parent / "scripts" / "drain_on_notice.py"
RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
]


def spot_drain_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    """Namespace, RBAC, the script and one DaemonSet on the spot groups' nodes; nothing without a spot group."""
    spot = spot_groups(groups)
    if not spot:
        return []
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": NAME},
         "rules": RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NAMESPACE},
         "data": {"drain_on_notice.py": SCRIPT.read_text(), "kube_api.py": KUBE_API.read_text()}},
        _daemonset(spot, pins.node_check.reference),
    ]


def _daemonset(spot: tuple[InClusterGroup, ...], image: str | None) -> Obj:
    labels = {"app.kubernetes.io/name": NAME}
    spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        "priorityClassName": "system-node-critical",
        # The metadata service answers the instance's own network (100.100.100.200), as the VM spot watcher reads it.
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "affinity": groups_affinity(spot),
        "containers": [{
            "name": "drain-on-notice", "image": image,
            "command": ["python3", "/etc/gpufleet/drain_on_notice.py"],
            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "resources": {"requests": {"cpu": "5m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
            "volumeMounts": [{"name": "scripts", "mountPath": "/etc/gpufleet", "readOnly": True}]}],
        "volumes": [{"name": "scripts", "configMap": {"name": NAME}}],
    }
    # A node can be reclaimed before its node check passes: the drain runs from the start.
    add_tolerations(spec, [startup_toleration(),
                           {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                           *taint_tolerations(spot)])
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}
