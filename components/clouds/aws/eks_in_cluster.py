"""What the in-cluster layer (components/kubernetes) is told about an EKS cluster: its node groups as InClusterGroups,
and the kubeconfig its Kubernetes provider reaches the API server with."""

from __future__ import annotations

import json

import pulumi

from components.kubernetes import InClusterGroup
from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

from .eks_nodes import node_labels, node_taints

# What `aws eks update-kubeconfig` writes for a user: a token from `aws eks get-token` on each call (AWS CLI
# reference, eks get-token: ExecCredential of client.authentication.k8s.io/v1beta1), so no token lands in the state.
EXEC_API = "client.authentication.k8s.io/v1beta1"


def in_cluster_group(group: ResolvedGroup) -> InClusterGroup:
    """One node group as the in-cluster components see it. The spec checks refused a type the catalog lacks."""
    spec = group.spec
    if group.primary is None:
        raise ValueError(f"{group.path('instance_types')}: {spec.instance_types[0]} is not in the catalog, so its GPUs "
                         "per node are unknown")
    return InClusterGroup(
        name=spec.name,
        fabric="efa" if group.rdma and group.fabric == "efa" else "none",
        instance_types=tuple(spec.instance_types),
        gpus_per_node=group.primary.gpu.count,
        min_size=spec.size.min,
        max_size=spec.size.max,
        scaling_group_name=group.names["scaling_group"],
        # What the kubelets register with (eks_nodes.py), less the placement group (a name the engine gives).
        labels=node_labels(spec, group.known_types, group.rdma, None),
        taints=node_taints(spec),
        spot=spec.spot,
        **spec.gpu_sharing.in_cluster_fields(),  # type: ignore[arg-type]
    )


def in_cluster_groups(resolved: ResolvedCluster) -> tuple[InClusterGroup, ...]:
    return tuple(in_cluster_group(group) for group in resolved.groups)


def kubeconfig(cluster_name: str, endpoint: str, certificate_authority: str, region: str) -> str:
    """A kubeconfig for one cluster whose user runs `aws eks get-token` (the AWS CLI of the machine that deploys)."""
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name,
                      "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": EXEC_API,
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
        }}}],
    }, sort_keys=True)


def kubeconfig_output(cluster_name: pulumi.Output[str], endpoint: pulumi.Output[str],
                      certificate_authority: pulumi.Output[str], region: str) -> pulumi.Output[str]:
    return pulumi.Output.all(cluster_name, endpoint, certificate_authority).apply(
        lambda values: kubeconfig(values[0], values[1], values[2], region)
    )


def update_kubeconfig_command(cluster_name: str, region: str) -> str:
    """The command that writes this cluster's kubeconfig on an operator's machine."""
    return f"aws eks update-kubeconfig --name {cluster_name} --region {region}"
