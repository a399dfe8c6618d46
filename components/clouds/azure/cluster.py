"""The Azure GPU cluster: a list of steps (resource group, network, key, identity, alarm target, budget, shared
storage, node groups), each a `create_*` function below whose resources are children of the cluster. With
`scheduler: kubernetes` the AKS steps (aks_steps.py) take the place of the node identity, the shared storage and the
scale sets: the AKS cluster, one agent pool per node group, and the in-cluster layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
from pulumi_azure_native import authorization, compute, resources

from gpufleet.clouds.azure.names import resource_group_name
from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup
from gpufleet.lock.status import image_tags

from ... import runtime
from ...bootstrap.operations import SharedMount
from ..scope import ClusterScope
from .alarms import action_group, group_alerts
from .budget import cost_budget
from .cluster_parts import Client, ClusterResourceGroup, NodeIdentity, SharedFileSystem
from .cluster_user_data import group_user_data
from .identity import (
    AzureNodeIdentity,
    NodeIdentityArgs,
    brought_principal_id,
    grant_metrics_publisher,
)
from .lifecycle import terminate_notice
from .lustre_sizes import subnet_prefixlen, tier_of
from .network import AzureNetwork, AzureNetworkArgs
from .nodegroup import AzureNodeGroup, NodeGroupArgs
from .shared_storage import FILESYSTEM_NAME, AzureSharedStorage, LustreArgs
from .slurm_head import SlurmHead, build_slurm_head, slurm_base
from .slurm_identity import grant_scaling
from .storage import AzureDiskEncryption, DiskEncryptionArgs
from .subnets import lustre_subnet_cidr, node_subnet_cidr

if TYPE_CHECKING:
    from .aks_steps import AksCluster

def image_reference(image_id: str | None) -> compute.ImageReferenceArgs | None:
    """A gallery image version id, or a marketplace URN publisher:offer:sku:version (always an explicit version)."""
    if image_id is None:
        return None
    if image_id.startswith("/"):
        return compute.ImageReferenceArgs(id=image_id)
    publisher, offer, sku, version = image_id.split(":")
    return compute.ImageReferenceArgs(publisher=publisher, offer=offer, sku=sku, version=version)


def refuse_without_admin_key(resolved: ResolvedCluster) -> None:
    """Azure creates no Linux scale set without a key or password; say so before any resource, not midway."""
    kubernetes = resolved.spec.scheduler.kind == "kubernetes"  # AKS makes its nodes' accounts itself
    if resolved.spec.admin_ssh_public_key is None and not kubernetes:
        runtime.refuse("admin_ssh_public_key", "unset: Azure needs a public key for a Linux scale set without a "
                       "password; set it in the stack (SSH stays closed unless network.admin_cidrs lists a source)")


class AzureGpuCluster(pulumi.ComponentResource):
    """A GPU cluster in one Azure region from a validated spec and a locked image profile."""

    resource_group_name: pulumi.Output[str]
    """The cluster's resource group, created or brought."""
    vnet_id: pulumi.Output[str]
    subnet_id: pulumi.Output[str]
    """The node subnet, created or brought."""
    scale_set_ids: dict[str, pulumi.Output[str]]
    """Per node group: its VM scale set."""
    disk_encryption_set_id: pulumi.Output[str]
    key_id: pulumi.Output[str]
    """The disk key: its resource id when created, its key URL when brought."""
    identity_id: pulumi.Output[str]
    """The nodes' user-assigned identity, created or brought."""
    action_group_id: pulumi.Output[str] | None
    """The action group alerts and the budget notify (created or brought); None without either."""
    shared_file_system_id: pulumi.Output[str] | None
    """The Azure Managed Lustre file system; None without storage.shared."""

    def __init__(self, resolved: ResolvedCluster, opts: pulumi.ResourceOptions | None = None) -> None:
        refuse_without_admin_key(resolved)
        if resolved.spec.scheduler.kind == "kubernetes":
            from .aks_in_cluster import refuse_unpinned_kubernetes  # the in-cluster layer loads only for Kubernetes

            refuse_unpinned_kubernetes(resolved)
        super().__init__("gpufleet:azure:Cluster", resolved.spec.name, None, opts)
        scope = ClusterScope.of(resolved, self)
        client = authorization.get_client_config_output(opts=scope.invoke())
        group = create_resource_group(scope, client)
        network = create_network(scope, group.name)
        encryption = create_key(scope, group.name, client, network)
        kubernetes = create_kubernetes(scope, group.name, network, encryption, client)
        if kubernetes is not None:
            self._kubernetes(scope, group, network, encryption, kubernetes)
            return
        identity = create_identity(scope, group.name, client)
        alarm_target = create_alarm_target(scope, group.name)
        create_budget(scope, group.id, alarm_target)
        shared = create_shared_storage(scope, network, encryption, group.name, client, alarm_target)
        image = image_reference(resolved.image.id if resolved.image else None)
        head = build_slurm_head(scope, group, network, encryption, identity, client, image)
        groups = create_groups(scope, group.name, network, encryption, identity, client, alarm_target, shared, head)
        if head is not None:
            grant_scaling(slurm_base(scope), head.identity, {n: g.scale_set_id for n, g in groups.items()},
                          any(not g.rdma for g in resolved.groups), group.id, scope.child)

        self.resource_group_name = group.name
        self.vnet_id = network.vnet_id
        self.subnet_id = network.subnet_id
        self.scale_set_ids = {n: g.scale_set_id for n, g in groups.items()}
        self.disk_encryption_set_id = encryption.disk_encryption_set_id
        self.key_id = encryption.key_id
        self.identity_id = identity.identity_id
        self.action_group_id = alarm_target
        self.shared_file_system_id = shared.file_system_id if shared else None
        self.kubernetes_outputs: dict[str, object] = {}
        self.register_outputs(self.exports())

    def _kubernetes(self, scope: ClusterScope, group: ClusterResourceGroup, network: AzureNetwork,
                    encryption: AzureDiskEncryption, kubernetes: AksCluster) -> None:
        """scheduler kubernetes: the alarm target and budget, one agent pool per group, the in-cluster layer, the GPU
        metrics and alerts."""
        from .aks_steps import aks_monitoring, aks_pools, aks_workloads

        alarm_target = create_alarm_target(scope, group.name)
        create_budget(scope, group.id, alarm_target)
        pools = aks_pools(scope, kubernetes, network.subnet_id)
        aks_workloads(scope, kubernetes, pools)
        aks_monitoring(scope, kubernetes, alarm_target)
        self.resource_group_name = group.name
        self.vnet_id = network.vnet_id
        self.subnet_id = network.subnet_id
        self.scale_set_ids = {}
        self.disk_encryption_set_id = encryption.disk_encryption_set_id
        self.key_id = encryption.key_id
        self.identity_id = kubernetes.aks.identity.id
        self.action_group_id = alarm_target
        self.shared_file_system_id = None
        self.kubernetes_outputs = kubernetes.exports()
        self.register_outputs(self.exports())

    def exports(self) -> dict[str, object]:
        """The stack outputs, by name: what callers and `pulumi stack output` read."""
        return {
            "resource_group_name": self.resource_group_name,
            "vnet_id": self.vnet_id,
            "subnet_id": self.subnet_id,
            "scale_set_ids": self.scale_set_ids,
            "disk_encryption_set_id": self.disk_encryption_set_id,
            "key_id": self.key_id,
            "identity_id": self.identity_id,
            "action_group_id": self.action_group_id,
            "shared_file_system_id": self.shared_file_system_id,
            **self.kubernetes_outputs,
        }


def create_resource_group(scope: ClusterScope, client: Client) -> ClusterResourceGroup:
    """The cluster's resource group, created or brought."""
    spec, net = scope.spec, scope.spec.network
    if net.resource_group:
        group_id = pulumi.Output.concat(
            "/subscriptions/", client.subscription_id, "/resourceGroups/", net.resource_group
        )
        return ClusterResourceGroup(pulumi.Output.from_input(net.resource_group), group_id)
    created = resources.ResourceGroup(
        f"{scope.name}-rg",
        resource_group_name=resource_group_name(spec.name, spec.environment, spec.region),
        location=spec.region,
        tags=scope.tags,
        opts=scope.child,
    )
    return ClusterResourceGroup(created.name, created.id)


def create_network(scope: ClusterScope, group_name: pulumi.Output[str]) -> AzureNetwork:
    """The VNet, node subnet and its security group, created or brought."""
    net = scope.spec.network
    return AzureNetwork(
        f"{scope.name}-net",
        AzureNetworkArgs(
            resource_group_name=group_name,
            location=scope.spec.region,
            zones=list(net.zones),
            admin_cidrs=[str(c) for c in net.admin_cidrs],
            tags=scope.tags,
            cidr=net.cidr,
            vnet_id=net.vnet_id,
            subnet_id=net.subnet_id,
            key_vault_endpoint=scope.spec.scheduler.kind == "slurm",
        ),
        opts=scope.child,
    )


def create_key(scope: ClusterScope, group_name: pulumi.Output[str], client: Client,
               network: AzureNetwork) -> AzureDiskEncryption:
    """The disk encryption set on a created vault key, or on the brought key; with Slurm the vault admits the node
    subnet (the munge key's secret)."""
    storage = scope.spec.storage
    return AzureDiskEncryption(
        f"{scope.name}-disk",
        DiskEncryptionArgs(
            resource_group_name=group_name,
            location=scope.spec.region,
            tenant_id=client.tenant_id,
            subscription_id=client.subscription_id,
            protect=scope.prod,
            tags=scope.tags,
            environment=scope.spec.environment,
            key_url=None if storage.kms_key == "create" else storage.kms_key,
            key_vault_id=storage.key_vault_id,
            data_plane_subnet_id=network.subnet_id if scope.spec.scheduler.kind == "slurm" else None,
        ),
        opts=scope.child,
    )


def create_kubernetes(scope: ClusterScope, group_name: pulumi.Output[str], network: AzureNetwork,
                      encryption: AzureDiskEncryption, client: Client) -> AksCluster | None:
    """scheduler kubernetes: the AKS cluster on the stack's keys in its VNet, and its admins (aks_steps.py); None
    for a VM cluster."""
    spec = scope.spec
    if spec.scheduler.kind != "kubernetes":
        return None
    from .aks_steps import AksNetwork, aks_control_plane  # the in-cluster layer loads only for Kubernetes

    return aks_control_plane(
        scope, group_name, AksNetwork(network.vnet_name, spec.network.cidr, network.subnet_id),
        encryption.disk_encryption_set_id, encryption.vault_id, encryption.vault_name, client.subscription_id,
        (client.object_id, spec.identity.deployer_principal_type))


def create_identity(scope: ClusterScope, group_name: pulumi.Output[str], client: Client) -> NodeIdentity:
    """The nodes' user-assigned identity with its roles, or the brought identity."""
    identity = scope.spec.identity
    if identity.identity_id:
        # A brought identity gets the same Monitoring Metrics Publisher on each scale set as a created one (nothing
        # else): without it the nodes' metrics, the alerts and the idle rule see nothing.
        principal = brought_principal_id(identity.identity_id, scope.invoke())
        return NodeIdentity(pulumi.Output.from_input(identity.identity_id), principal)
    created = AzureNodeIdentity(
        f"{scope.name}-node",
        NodeIdentityArgs(
            resource_group_name=group_name,
            location=scope.spec.region,
            subscription_id=client.subscription_id,
            blob_read_containers=list(identity.blob_read_containers),
            metrics_scope=identity.metrics_scope,
            tags=scope.tags,
        ),
        opts=scope.child,
    )
    return NodeIdentity(created.identity_id, created.principal_id)


def create_alarm_target(scope: ClusterScope, group_name: pulumi.Output[str]) -> pulumi.Output[str] | None:
    """The action group alerts and the budget notify: brought, or created with its recipients; None without
    either."""
    alarms, mode = scope.spec.monitoring.alarms, scope.resolved.alarm_target_mode
    if mode == "bring" and alarms is not None:
        return pulumi.Output.from_input(alarms.target)
    if mode == "create":
        return action_group(scope.name, group_name, list(alarms.emails) if alarms else [], scope.tags, scope.child).id
    return None


def create_budget(scope: ClusterScope, group_id: pulumi.Output[str], alarm_target: pulumi.Output[str] | None) -> None:
    """A Consumption budget on the resource group notifying the alarm target at budget.alert_at_percent."""
    budget = scope.spec.budget
    if budget.alert_at_percent and alarm_target is not None:
        cost_budget(scope.name, scope.spec.environment, group_id, budget, alarm_target, scope.child)


def create_shared_storage(
    scope: ClusterScope, network: AzureNetwork, encryption: AzureDiskEncryption, group_name: pulumi.Output[str],
    client: Client, alarm_target: pulumi.Output[str] | None,
) -> SharedFileSystem | None:
    """Azure Managed Lustre and its mount, or None without storage.shared (the checks made sure it fits)."""
    spec = scope.spec
    shared, cidr = spec.storage.shared, spec.network.cidr
    if shared is None or cidr is None or network.vnet_name is None or network.nat_gateway_id is None:
        return None
    catalog = scope.resolved.catalog
    tier, prefixlen = tier_of(catalog, shared.throughput_mb_per_tib), subnet_prefixlen(catalog, shared.capacity_tib)
    node_cidr = node_subnet_cidr(cidr)
    lustre_cidr = lustre_subnet_cidr(cidr, prefixlen) if prefixlen else None
    assert tier is not None and node_cidr is not None and lustre_cidr is not None
    brought = spec.storage.kms_key if spec.storage.kms_key != "create" else None
    storage = AzureSharedStorage(
        f"{spec.name}-shared",
        LustreArgs(
            shared=shared, tier=tier, resource_group_name=group_name, location=spec.region,
            zone=spec.network.zones[0], vnet_name=network.vnet_name, nat_gateway_id=network.nat_gateway_id,
            node_cidr=node_cidr, lustre_cidr=lustre_cidr, subscription_id=client.subscription_id,
            vault_name=encryption.vault_name, vault_id=encryption.vault_id, brought_key_url=brought,
            protect=scope.prod, tags=scope.tags, alarm_target=alarm_target,
        ),
        int(catalog.limit("azure", "amlfs_key_size")),
        scope.child,
    )
    mount = storage.mgs_address.apply(
        lambda address: SharedMount(dns_name=address, mount_name=FILESYSTEM_NAME, mount=shared.mount)
    )
    return SharedFileSystem(storage.file_system_id, mount)


def create_groups(
    scope: ClusterScope, group_name: pulumi.Output[str], network: AzureNetwork, encryption: AzureDiskEncryption,
    identity: NodeIdentity, client: Client, alarm_target: pulumi.Output[str] | None, shared: SharedFileSystem | None,
    head: SlurmHead | None,
) -> dict[str, AzureNodeGroup]:
    """One VM scale set per node group, each with its metrics grant and alerts; with Slurm, its VMs join the head."""
    spec, name, storage = scope.spec, scope.name, scope.spec.storage
    entry = scope.resolved.image  # the spec check made sure it exists
    notice = terminate_notice(spec.bootstrap.checkpoint_grace_seconds, scope.resolved.catalog)
    groups: dict[str, AzureNodeGroup] = {}
    for resolved_group in scope.resolved.groups:
        group = resolved_group.spec
        node_group = AzureNodeGroup(
            f"{name}-{group.name}",
            NodeGroupArgs(
                group=group,
                rdma=resolved_group.rdma,
                scale_set_name=resolved_group.names["scaling_group"],
                resource_group_name=group_name,
                location=spec.region,
                zones=list(resolved_group.zones),
                image=image_reference(entry.id if entry else None),
                subnet_id=network.subnet_id,
                identity_id=identity.identity_id,
                disk_encryption_set_id=encryption.disk_encryption_set_id,
                disk_key_access=encryption.key_access,
                root_volume_gb=storage.root_volume_gb,
                encryption_at_host=storage.encryption_at_host,
                user_data=group_user_data(scope, resolved_group, notice, shared, head),
                admin_ssh_public_key=spec.admin_ssh_public_key,
                terminate_notice=notice,
                tags=scope.tags,
                image_tags=image_tags(spec.image, entry) if entry else {},
                deployer=(client.object_id, spec.identity.deployer_principal_type),
                subscription_id=client.subscription_id,
                application_security_group_id=head.nodes_asg_id if head else None,
            ),
            opts=scope.child,
        )
        _group_operations(scope, resolved_group, node_group, group_name, identity, client, alarm_target)
        groups[group.name] = node_group
    return groups


def _group_operations(
    scope: ClusterScope, resolved_group: ResolvedGroup, node_group: AzureNodeGroup, group_name: pulumi.Output[str],
    identity: NodeIdentity, client: Client, alarm_target: pulumi.Output[str] | None,
) -> None:
    """The identity's right to publish the group's metrics, and the group's alerts, children of the group."""
    name = f"{scope.name}-{resolved_group.spec.name}"
    monitoring, alarms = scope.spec.monitoring, scope.spec.monitoring.alarms
    group_opts = pulumi.ResourceOptions(parent=node_group)
    if monitoring.gpu_metrics:
        grant_metrics_publisher(name, node_group.scale_set_id, identity.principal_id, client.subscription_id,
                                group_opts)
    if alarms is not None and alarm_target is not None:
        group_alerts(name, resolved_group.names["scaling_group"], node_group.scale_set_id, alarms.low_utilisation,
                     group_name, alarm_target, scope.tags, group_opts)
