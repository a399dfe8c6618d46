"""The Kubernetes steps of an Azure cluster with `scheduler: kubernetes`, children of the cluster: the AKS control
plane (aks.py) and its admins, one agent pool per node group (aks_pools.py) in place of the scale sets, and the
in-cluster layer through a Kubernetes provider for the cluster (aks_in_cluster.py).

Admins get the built-in role Azure Kubernetes Service RBAC Cluster Admin on the cluster (manage-azure-rbac), not
aadProfile.adminGroupObjectIds: that list takes Entra groups only, while scheduler.admins may name users, groups or
service principals, and a role assignment is a resource the plan lists and the stack removes. The identity that runs
`pulumi up` gets the same role, since its provider creates the in-cluster objects (as on EKS, eks_access.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
from pulumi_azure_native import authorization, containerservice
from pulumiverse_time import Sleep

from components.kubernetes import InCluster, InClusterArgs
from gpufleet.clouds.azure.names import aks_cluster_name

from ...bootstrap.for_group import node_check_expectations
from ..scope import ClusterScope
from .aks import Aks, AksArgs, control_plane
from .aks_autoscaler import unneeded_minutes
from .aks_in_cluster import credentials_command, in_cluster_groups, kubeconfig_output
from .aks_monitoring import PrometheusArgs, managed_prometheus, pool_alerts
from .aks_pools import PoolArgs, agent_pool, pool_names
from .storage import RBAC_PROPAGATION, role_definition_id

RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"  # built-in-roles, Containers section
# AKS pricing tiers (MicrosoftDocs/azure-aks-docs articles/aks/free-standard-pricing-tiers.md; the API's
# ManagedClusterSKUTier): Free is for experimenting and workloads under 10 nodes, not production; Standard for
# production.
FREE_TIER_NODES = 10


@dataclass(frozen=True)
class AksCluster:
    """The control plane, its admin access, and the resource group it is in."""

    aks: Aks
    admins: Sleep
    resource_group_name: pulumi.Output[str]

    def exports(self) -> dict[str, object]:
        """Stack outputs: the cluster's name, the key version KMS encrypts secrets with, and the commands that write
        a kubeconfig for it."""
        cluster = self.aks.cluster
        return {
            "kubernetes_cluster": cluster.name,
            "kubernetes_kms_key": self.aks.kms_key_url,
            "kubeconfig": pulumi.Output.all(self.resource_group_name, cluster.name).apply(
                lambda values: credentials_command(values[0], values[1])),
        }


@dataclass(frozen=True)
class AksNetwork:
    """Where the cluster goes: a VNet gpufleet created (the API server's subnet is carved from it)."""

    vnet_name: pulumi.Output[str] | None
    vnet_cidr: IPv4Network | None
    subnet_id: pulumi.Output[str]


def aks_control_plane(scope: ClusterScope, group_name: pulumi.Output[str], net: AksNetwork,
                      des_id: pulumi.Output[str], vault_id: pulumi.Output[str], vault_name: pulumi.Output[str] | None,
                      subscription_id: pulumi.Output[str], deployer: tuple[pulumi.Output[str], str]) -> AksCluster:
    """The cluster in the stack's VNet on the stack's keys, and who administers it."""
    spec = scope.spec
    if net.vnet_name is None or net.vnet_cidr is None:
        raise pulumi.RunError(
            "network.subnet_id: AKS reaches the stack's private Key Vault over API Server VNet Integration, whose "
            "delegated subnet gpufleet carves from a VNet it creates; set network.cidr instead of bringing the VNet")
    storage, scheduler = spec.storage, spec.scheduler
    if storage.shared is not None:
        raise pulumi.RunError("storage.shared: AKS nodes do not mount the Azure Managed Lustre file system yet (its "
                              "CSI driver is not built); remove storage.shared from a scheduler kubernetes stack")
    system = scope.resolved.system_type
    assert system is not None, "system_group_type_in_catalog refuses an unknown type"
    aks = control_plane(scope.name, AksArgs(
        cluster_name=aks_cluster_name(spec.name, spec.environment),
        version=scheduler.version or "",
        resource_group_name=group_name,
        location=spec.region,
        zones=list(spec.network.zones),
        subscription_id=subscription_id,
        node_subnet_id=net.subnet_id,
        vnet_name=net.vnet_name,
        vnet_cidr=net.vnet_cidr,
        disk_encryption_set_id=des_id,
        vault_id=vault_id,
        vault_name=vault_name,
        brought_key_url=None if storage.kms_key == "create" else storage.kms_key,
        encryption_at_host=storage.encryption_at_host,
        system_vm_size=system[0],
        system_min=scheduler.system_group.size.min,
        system_max=scheduler.system_group.size.max,
        public_cidrs=[str(c) for c in scheduler.public_cidrs] if scheduler.endpoint == "public" else [],
        protect=scope.prod,
        standard_tier=scope.prod or most_nodes(scope) >= FREE_TIER_NODES,
        idle_minutes=unneeded_minutes(scope.resolved),
        prometheus=spec.monitoring.gpu_metrics,
        tags=scope.tags,
    ), scope.child)
    admins = cluster_admins(scope, aks.cluster, subscription_id, deployer)
    return AksCluster(aks, admins, group_name)


def most_nodes(scope: ClusterScope) -> int:
    """The nodes the cluster can reach: every group and the system pool at their max."""
    system = scope.spec.scheduler.system_group.size.max
    return system + sum(group.spec.size.max for group in scope.resolved.groups)


def cluster_admins(scope: ClusterScope, cluster: containerservice.ManagedCluster, subscription_id: pulumi.Output[str],
                   deployer: tuple[pulumi.Output[str], str]) -> Sleep:
    """RBAC Cluster Admin for the deployer and each of scheduler.admins, and the wait until ARM enforces them."""
    role = role_definition_id(subscription_id, RBAC_CLUSTER_ADMIN)
    principals: list[tuple[pulumi.Input[str], str | None]] = [
        (deployer[0], deployer[1]), *((admin, None) for admin in scope.spec.scheduler.admins)]
    assignments = [
        authorization.RoleAssignment(
            f"{scope.name}-aks-admin-{i}",
            scope=cluster.id,
            principal_id=principal,
            principal_type=principal_type,
            role_definition_id=role,
            description="Kubernetes cluster admin through Azure RBAC (local accounts are off)",
            opts=scope.child,
        )
        for i, (principal, principal_type) in enumerate(principals)
    ]
    return Sleep(
        f"{scope.name}-aks-admins-propagated",
        create_duration=RBAC_PROPAGATION,
        triggers={str(i): a.id for i, a in enumerate(assignments)},
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=assignments)),
    )


def aks_pools(scope: ClusterScope, kubernetes: AksCluster, subnet_id: pulumi.Output[str]
              ) -> dict[str, containerservice.AgentPool]:
    """One agent pool per node group."""
    spec = scope.spec
    args = PoolArgs(cluster_name=kubernetes.aks.cluster.name, resource_group_name=kubernetes.resource_group_name,
                    subnet_id=subnet_id, version=spec.scheduler.version or "",
                    root_volume_gb=spec.storage.root_volume_gb, encryption_at_host=spec.storage.encryption_at_host)
    names = pool_names(scope.resolved)
    return {group.spec.name: agent_pool(scope.name, group, names[group.spec.name], args, scope.child)
            for group in scope.resolved.groups}


def aks_workloads(scope: ClusterScope, kubernetes: AksCluster, pools: dict[str, containerservice.AgentPool]
                  ) -> InCluster:
    """The in-cluster components through a provider for this cluster, once the pools and the admin roles exist."""
    import pulumi_kubernetes as k8s  # loads only for a Kubernetes cluster

    spec, name, cluster = scope.spec, scope.name, kubernetes.aks.cluster
    version = spec.scheduler.version or ""
    after: list[pulumi.Resource] = [kubernetes.admins, *pools.values()]
    kubeconfig = kubeconfig_output(kubernetes.resource_group_name, cluster.name,
                                   pulumi.InvokeOutputOptions(parent=scope.parent, depends_on=[cluster]))
    provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig,
                            opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=after)))
    profile = scope.resolved.profile
    args = InClusterArgs(cloud="azure", cluster_name=cluster.name, kubernetes_version=version, region=spec.region,
                         groups=in_cluster_groups(scope.resolved, pool_names(scope.resolved)),
                         driver=profile.driver if profile else None,
                         node_check=node_check_expectations(scope.resolved),
                         job_operators=tuple(spec.scheduler.job_operators))
    in_cluster = InCluster(name, args, pulumi.ResourceOptions(parent=scope.parent, provider=provider))
    if spec.monitoring.gpu_metrics:
        from components.kubernetes.azure_prometheus import scrape_config
        from components.kubernetes.manifests import register

        # In the in-cluster layer with the exporter it scrapes (its provider is the layer's).
        register(name, scrape_config(), pulumi.ResourceOptions(parent=in_cluster))
    return in_cluster


def aks_monitoring(scope: ClusterScope, kubernetes: AksCluster, alarm_target: pulumi.Output[str] | None) -> None:
    """Managed Prometheus for the GPU metrics (monitoring.gpu_metrics) and, with alarms, each pool's alert rules
    notifying the alarm target (aks_monitoring.py)."""
    monitoring, cluster = scope.spec.monitoring, kubernetes.aks.cluster
    if not monitoring.gpu_metrics:
        return
    args = PrometheusArgs(kubernetes.resource_group_name, scope.spec.region, cluster.id, cluster.name, scope.tags)
    workspace = managed_prometheus(scope.name, args, scope.child)
    if monitoring.alarms is None or alarm_target is None:
        return
    for group, pool in pool_names(scope.resolved).items():
        pool_alerts(scope.name, group, pool, workspace.id, args, monitoring.alarms.low_utilisation, alarm_target,
                    scope.child)
