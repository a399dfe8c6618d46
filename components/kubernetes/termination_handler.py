"""AWS Node Termination Handler in IMDS mode (manifests/aws-node-termination-handler.yaml): on every spot node, it
cordons and drains the node when EC2 sends a spot interruption notice or a rebalance recommendation, or when the
Auto Scaling group moves the instance to Terminated, so pods go before the node does.

It runs only where spot capacity can be: nodes whose kubelet registered node.kubernetes.io/lifecycle=spot (the join
reads instance-life-cycle from the instance metadata: components/bootstrap/scripts/eks-join.sh); an on-demand node
of a mixed group never gets a notice. The node's own spot watcher keeps running beside it: the stack's checkpoint
hook and the terminate hook's completion stay with the node (components/bootstrap/scripts/spot-watcher.sh), the
drain is this handler's. Rebalance draining is on (the chart's default is off): the Auto Scaling groups rebalance
capacity (capacity_rebalance), and a drained node is one whose jobs checkpoint before the interruption.
"""

from __future__ import annotations

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, containers, find, pod_spec, read_manifest
from .model import InClusterGroup

NAME = "aws-node-termination-handler"
LIFECYCLE_LABEL = "node.kubernetes.io/lifecycle"
# The chart's own term (daemonsetAffinity) keeps Fargate out; spot nodes only is added to it.
SPOT_ONLY = {"key": LIFECYCLE_LABEL, "operator": "In", "values": ["spot"]}
SETTINGS = {"ENABLE_REBALANCE_MONITORING": "true", "ENABLE_REBALANCE_DRAINING": "true"}


def spot_groups(groups: tuple[InClusterGroup, ...]) -> tuple[InClusterGroup, ...]:
    return tuple(group for group in groups if group.spot)


def termination_handler_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> list[Obj]:
    """The handler's service account, RBAC and DaemonSet; nothing when no group runs spot capacity."""
    if not spot_groups(groups):
        return []
    objects = read_manifest(NAME).fresh()
    daemonset = find(objects, "DaemonSet", NAME)
    for container in containers(daemonset):
        container["image"] = pins.node_termination_handler.images[NAME].reference
        for variable in container["env"]:
            if variable["name"] in SETTINGS:
                variable["value"] = SETTINGS[variable["name"]]
    terms = pod_spec(daemonset)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    for term in terms["nodeSelectorTerms"]:
        term["matchExpressions"].append(dict(SPOT_ONLY))
    return objects
