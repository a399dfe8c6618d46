"""Cluster Autoscaler for the node groups' Auto Scaling groups (AWS; manifests/cluster-autoscaler-aws.yaml).

One `--nodes=min:max:<group>` per node group, rather than tag auto-discovery: the plan shows each group's bounds,
and the autoscaler resizes only this stack's groups. With explicit groups and no --node-group-auto-discovery flag the
autoscaler manages exactly the groups named (cluster-autoscaler-1.35.2 cloudprovider/aws/auto_scaling_groups.go:
126-132 parseExplicitAsgs, 473: a group neither discovered nor explicitly configured is dropped), so the
k8s.io/cluster-autoscaler/* tags EKS puts on a managed node group's Auto Scaling group select nothing here.
The system group (an EKS managed node group) is one of them when its size.min < size.max: its Auto Scaling group,
named by EKS, gets `--nodes=min:max:<name>` from the node group's output, so the nodes the stack lets it add for
operators and launchers are added (size.min == size.max: nothing to resize, not given). The autoscaler runs there
itself (nodeSelector on the system label), never on a GPU node it may remove. A managed group is read through
eks:DescribeNodegroup only while it has 0 nodes (cloudprovider/aws/README.md:110); the system group's size.min is
at least 1, so the autoscaler never needs that call. Scale-from-zero reads the node-template tags
(k8s.io/cluster-autoscaler/node-template/...) the cloud side puts on each Auto Scaling group (cluster-autoscaler/
cloudprovider/aws/README.md). The image's minor version is the cluster's (cluster-autoscaler/README.md, Releases).
"""

from __future__ import annotations

import pulumi

from components.clouds.aws.lifecycle import LAUNCH_HOOK_TIMEOUT
from gpufleet.lock.kubernetes_components import KubernetesComponents
from gpufleet.stackfile.scheduler import SYSTEM_NODE_LABELS

from .manifests import Obj, find, pod_spec, read_manifest
from .model import InClusterGroup, SystemScaling

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


def system_flag(system: SystemScaling | None) -> list[pulumi.Input[str]]:
    """`--nodes=min:max:<system Auto Scaling group>` when the system group has room to grow, else nothing."""
    if system is None or system.min_size >= system.max_size:
        return []
    return [pulumi.Output.concat(f"--nodes={system.min_size}:{system.max_size}:", system.scaling_group_name)]


def autoscaler_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents, minor: str,
                       region: str, system: SystemScaling | None = None) -> list[Obj]:
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
                            MAX_NODE_PROVISION_TIME, *nodes_flags(groups), *system_flag(system)]
    container["env"] = [{"name": "AWS_REGION", "value": region}]
    # The example's only volume is the host's certificate bundle, at a path only Amazon Linux has.
    container.pop("volumeMounts", None)
    spec.pop("volumes", None)
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **SYSTEM_NODE_LABELS}
    return objects
