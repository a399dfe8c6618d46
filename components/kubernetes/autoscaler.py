"""Cluster Autoscaler for the node groups' Auto Scaling groups (AWS; manifests/cluster-autoscaler-aws.yaml).

One `--nodes=min:max:<group>` per node group, rather than tag auto-discovery: the plan shows each group's bounds,
and the autoscaler resizes only this stack's groups. Scale-from-zero reads the node-template tags
(k8s.io/cluster-autoscaler/node-template/...) the cloud side puts on each Auto Scaling group (cluster-autoscaler/
cloudprovider/aws/README.md). The image's minor version is the cluster's (cluster-autoscaler/README.md, Releases).
"""

from __future__ import annotations

from components.clouds.aws.lifecycle import LAUNCH_HOOK_TIMEOUT
from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, find, pod_spec, read_manifest
from .model import InClusterGroup
from .placement import add_tolerations, taint_tolerations

NAME = "cluster-autoscaler"
AUTO_DISCOVERY = "--node-group-auto-discovery="
# A node registers only after its launch hold (the node check, at most LAUNCH_HOOK_TIMEOUT from launch) and the
# join (components/bootstrap/scripts/eks-join.sh: bootstrap.sh, the kubelet's start and TLS bootstrap; a budget).
# The autoscaler's default wait for a node to register is 15 minutes, the hold alone (cluster-autoscaler-1.35.2
# config/flags/flags.go:127 --max-node-provision-time; FAQ.md:803-809: after it the node is left out of simulations
# and deleted as unregistered). AWS reads no per-group override (cloudprovider/aws/aws_manager.go:214-262,
# GetAsgOptions), so the flag says it for every group.
JOIN_SECONDS = 300
MAX_NODE_PROVISION_TIME = f"--max-node-provision-time={(LAUNCH_HOOK_TIMEOUT + JOIN_SECONDS) // 60}m"


def nodes_flags(groups: tuple[InClusterGroup, ...]) -> list[str]:
    """`--nodes=min:max:name` for every group (ValueError naming a group without its scaling group's name)."""
    flags = []
    for group in groups:
        if not group.scaling_group_name:
            raise ValueError(f"node group {group.name!r}: scaling_group_name is empty; the autoscaler resizes the "
                             "group by its Auto Scaling group's name")
        flags.append(f"--nodes={group.min_size}:{group.max_size}:{group.scaling_group_name}")
    return flags


def autoscaler_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents, minor: str,
                       region: str) -> list[Obj]:
    images = pins.cluster_autoscaler.images
    if minor not in images:
        raise ValueError(f"images/lock.yaml kubernetes_components.cluster_autoscaler.images has no pin for Kubernetes "
                         f"{minor} (pinned: {', '.join(sorted(images))})")
    objects = read_manifest("cluster-autoscaler-aws").fresh()
    deployment = find(objects, "Deployment", NAME)
    spec = pod_spec(deployment)
    container = spec["containers"][0]
    container["image"] = images[minor].reference
    container["command"] = [*(arg for arg in container["command"] if not arg.startswith(AUTO_DISCOVERY)),
                            MAX_NODE_PROVISION_TIME, *nodes_flags(groups)]
    container["env"] = [{"name": "AWS_REGION", "value": region}]
    # The example's only volume is the host's certificate bundle, at a path only Amazon Linux has.
    container.pop("volumeMounts", None)
    spec.pop("volumes", None)
    # The cluster has no node outside the groups (no system group): the autoscaler runs on a group's node and
    # tolerates what the groups are tainted with, or it stays Pending and nothing ever scales.
    add_tolerations(spec, taint_tolerations(groups))
    return objects
