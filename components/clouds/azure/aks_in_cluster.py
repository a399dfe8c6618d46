"""What the in-cluster layer (components/kubernetes) is told about an AKS cluster: its agent pools as InClusterGroups,
and the kubeconfig its Kubernetes provider reaches the API server with.

With local accounts off, AKS's user kubeconfig authenticates through kubelogin. `kubelogin convert-kubeconfig -l
azurecli` rewrites each kubelogin user to the exec `kubelogin get-token --login azurecli --server-id <id>` of
client.authentication.k8s.io/v1beta1, keeping the server id the user had (Azure/kubelogin @6678496:
pkg/internal/converter/convert.go; docs/book/src/concepts/aks.md: 6dae42f8-4368-4678-94ff-3960e28e3630 is the AKS AAD
server application, the same in every environment). The token comes from the deployer's `az login` on each call, so
none lands in the state (the same idea as `aws eks get-token` on EKS).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pulumi
import yaml

from components.bootstrap.for_group import node_check_expectations
from components.kubernetes import InClusterGroup
from components.kubernetes.pool_nodes import gpus_per_node
from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

from .aks_pools import SPOT_KEY, SPOT_TAINT, pool_fabric, pool_labels, pool_names, pool_taints

EXEC_API = "client.authentication.k8s.io/v1beta1"
AKS_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
KUBELOGIN_ARGS = ["get-token", "--login", "azurecli", "--server-id", AKS_SERVER_ID]


def server_id(user: dict[str, Any]) -> str:
    """The --server-id the user's kubelogin exec names, as the converter keeps it; AKS's server app otherwise."""
    args = list(((user.get("user") or {}).get("exec") or {}).get("args") or [])
    return args[args.index("--server-id") + 1] if "--server-id" in args[:-1] else AKS_SERVER_ID


def in_cluster_group(group: ResolvedGroup, pool: str) -> InClusterGroup:
    """One agent pool as the in-cluster components see it: the labels and taints its nodes carry, AKS's spot ones
    included (spot-node-pool docs), so the daemons' affinity and tolerations match the nodes."""
    spec, spot = group.spec, group.spec.capacity == "spot"
    labels = {**pool_labels(group), **({SPOT_KEY: "spot"} if spot else {})}
    return InClusterGroup(
        name=spec.name,
        fabric=pool_fabric(group),
        instance_types=tuple(spec.instance_types),
        gpus_per_node=gpus_per_node(group),
        min_size=spec.size.min,
        max_size=spec.size.max,
        scaling_group_name=pool,
        labels=labels,
        taints=(*pool_taints(group), *((SPOT_TAINT,) if spot else ())),
        spot=spot,
        **spec.gpu_sharing.in_cluster_fields(),  # type: ignore[arg-type]
    )


def in_cluster_groups(resolved: ResolvedCluster, pools: dict[str, str]) -> tuple[InClusterGroup, ...]:
    return tuple(in_cluster_group(group, pools[group.spec.name]) for group in resolved.groups)


def refuse_unpinned_kubernetes(resolved: ResolvedCluster) -> None:
    """A real run stops before any resource while an in-cluster image (the driver's included) is not pinned."""
    from components.kubernetes import refuse_unpinned

    spec, profile = resolved.spec, resolved.profile
    groups = in_cluster_groups(resolved, pool_names(resolved))
    refuse_unpinned("azure", spec.scheduler.version or "", spec.region, groups, profile.driver if profile else None,
                    node_check_expectations(resolved), tuple(spec.scheduler.job_operators))


def kubelogin_kubeconfig(kubeconfig: dict[str, Any]) -> str:
    """AKS's user kubeconfig with every user turned into the azurecli kubelogin exec, as JSON."""
    users = [{"name": user["name"], "user": {"exec": {
        "apiVersion": EXEC_API, "command": "kubelogin", "args": [*KUBELOGIN_ARGS[:-1], server_id(user)]}}}
        for user in kubeconfig.get("users") or []]
    return json.dumps({**kubeconfig, "users": users}, sort_keys=True)


def converted(encoded: str) -> str:
    """A base64 kubeconfig of list_managed_cluster_user_credentials, converted."""
    return kubelogin_kubeconfig(yaml.safe_load(base64.b64decode(encoded)))


def kubeconfig_output(resource_group_name: pulumi.Input[str], cluster_name: pulumi.Input[str],
                      opts: pulumi.InvokeOutputOptions) -> pulumi.Output[str]:
    """The cluster's user kubeconfig (no secret in it: kubelogin fetches the token), converted for kubelogin."""
    from pulumi_azure_native import containerservice

    credentials = containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=resource_group_name, resource_name=cluster_name, opts=opts)
    return credentials.apply(lambda result: converted(result.kubeconfigs[0].value))


def credentials_command(resource_group_name: str, cluster_name: str) -> str:
    """The commands that write this cluster's kubeconfig on an operator's machine."""
    return (f"az aks get-credentials --resource-group {resource_group_name} --name {cluster_name} && "
            "kubelogin convert-kubeconfig -l azurecli")
