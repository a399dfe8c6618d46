"""The Azure GPU cluster: resource group, network, disk encryption, node identity, one scale set per group, and
the operations options (GPU metrics, alerts, idle scale-in, budget, the shared Lustre file system)."""

from __future__ import annotations

from dataclasses import replace

import pulumi
from pulumi_azure_native import authorization, compute, resources

from gpufleet.clouds.azure.names import GROUP, NAMES
from gpufleet.clouds.naming import fit
from gpufleet.lock.status import image_tags
from gpufleet.resolve import ResolvedCluster

from ... import runtime
from ...bootstrap import render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...bootstrap.operations import GpuMetrics, SharedMount
from ...tags import resource_tags
from .alarms import action_group, group_alerts
from .budget import cost_budget
from .identity import METRICS_NAMESPACE, AzureNodeIdentity, NodeIdentityArgs, grant_metrics_publisher
from .lifecycle import HEALTH_PORT, terminate_notice
from .lustre_sizes import subnet_prefixlen, tier_of
from .network import AzureNetwork, AzureNetworkArgs
from .nodegroup import AzureNodeGroup, NodeGroupArgs
from .shared_storage import FILESYSTEM_NAME, AzureSharedStorage, LustreArgs
from .storage import AzureDiskEncryption, DiskEncryptionArgs
from .subnets import lustre_subnet_cidr, node_subnet_cidr

# The longest address the file system's MGS can have: rendering with it first reports an oversized user data
# before any resource.
LONGEST_ADDRESS = "255.255.255.255"


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
    if resolved.spec.admin_ssh_public_key is None and not runtime.running_offline():
        raise pulumi.RunError(
            "admin_ssh_public_key is unset: Azure needs a public key for a Linux scale set without a password; "
            "set it in the stack (SSH stays closed unless network.admin_cidrs lists a source)"
        )


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
        spec = resolved.spec
        name = spec.name
        refuse_without_admin_key(resolved)
        super().__init__("gpufleet:azure:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = resource_tags(spec.tags, spec.name, spec.environment)
        location = spec.region
        net = spec.network
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))

        if net.resource_group:
            group_name: pulumi.Output[str] = pulumi.Output.from_input(net.resource_group)
            group_id = pulumi.Output.concat(
                "/subscriptions/", client.subscription_id, "/resourceGroups/", net.resource_group
            )
        else:
            created_group = resources.ResourceGroup(
                f"{name}-rg",
                # Unique in the subscription, over every region: the region's hash keeps one name in two regions apart.
                resource_group_name=fit(f"gpufleet-{name}-{spec.environment}", NAMES.limit(GROUP, "resourceGroupName"),
                                        location),
                location=location,
                tags=tags,
                opts=child,
            )
            group_name, group_id = created_group.name, created_group.id

        network = AzureNetwork(
            f"{name}-net",
            AzureNetworkArgs(
                resource_group_name=group_name,
                location=location,
                zones=list(net.zones),
                admin_cidrs=[str(c) for c in net.admin_cidrs],
                tags=tags,
                cidr=net.cidr,
                vnet_id=net.vnet_id,
                subnet_id=net.subnet_id,
            ),
            opts=child,
        )
        storage = spec.storage
        encryption = AzureDiskEncryption(
            f"{name}-disk",
            DiskEncryptionArgs(
                resource_group_name=group_name,
                location=location,
                tenant_id=client.tenant_id,
                subscription_id=client.subscription_id,
                protect=spec.environment == "prod",
                tags=tags,
                key_url=None if storage.kms_key == "create" else storage.kms_key,
                key_vault_id=storage.key_vault_id,
            ),
            opts=child,
        )
        principal_id: pulumi.Output[str] | None = None  # a brought identity gets no role from gpufleet
        if spec.identity.identity_id:
            identity_id: pulumi.Output[str] = pulumi.Output.from_input(spec.identity.identity_id)
        else:
            node_identity = AzureNodeIdentity(
                f"{name}-node",
                NodeIdentityArgs(
                    resource_group_name=group_name,
                    location=location,
                    subscription_id=client.subscription_id,
                    blob_read_containers=list(spec.identity.blob_read_containers),
                    metrics_scope=spec.identity.metrics_scope,
                    tags=tags,
                ),
                opts=child,
            )
            identity_id, principal_id = node_identity.identity_id, node_identity.principal_id

        monitoring, budget, alarms = spec.monitoring, spec.budget, spec.monitoring.alarms
        target: pulumi.Output[str] | None = None
        if resolved.alarm_target_mode == "bring" and alarms is not None:
            target = pulumi.Output.from_input(alarms.target)
        elif resolved.alarm_target_mode == "create":
            target = action_group(name, group_name, list(alarms.emails) if alarms else [], tags, child).id
        if budget.alert_at_percent and target is not None:
            cost_budget(name, group_id, budget, target, child)
        shared_mount = self._shared_file_system(resolved, network, encryption, group_name, client, tags, child)

        entry = resolved.image  # the spec check made sure it exists
        notice = terminate_notice(spec.bootstrap.checkpoint_grace_seconds, resolved.catalog)
        groups: dict[str, AzureNodeGroup] = {}
        for resolved_group in resolved.groups:
            group, rdma = resolved_group.spec, resolved_group.rdma
            bootstrap = group_bootstrap(
                resolved,
                resolved_group,
                # The checkpoint must end before Azure deletes a Regular VM (the terminate notice).
                checkpoint_grace_seconds=min(spec.bootstrap.checkpoint_grace_seconds, notice.seconds),
                health_port=HEALTH_PORT,
                gpu_metrics=GpuMetrics(METRICS_NAMESPACE, resolved_group.names["scaling_group"], location)
                if monitoring.gpu_metrics
                else None,
            )
            user_data: pulumi.Input[str] = render_user_data(bootstrap)
            if shared_mount is not None:
                shared = spec.storage.shared
                assert shared is not None
                render_user_data(replace(bootstrap, shared_mount=SharedMount(
                    LONGEST_ADDRESS, FILESYSTEM_NAME, shared.mount)))
                user_data = shared_mount.apply(
                    lambda mount, cfg=bootstrap: render_user_data(replace(cfg, shared_mount=mount))
                )
            groups[group.name] = AzureNodeGroup(
                f"{name}-{group.name}",
                NodeGroupArgs(
                    group=group,
                    rdma=rdma,
                    scale_set_name=resolved_group.names["scaling_group"],
                    resource_group_name=group_name,
                    location=location,
                    zones=list(resolved_group.zones),
                    image=image_reference(entry.id if entry else None),
                    subnet_id=network.subnet_id,
                    identity_id=identity_id,
                    disk_encryption_set_id=encryption.disk_encryption_set_id,
                    disk_key_access=encryption.key_access,
                    root_volume_gb=storage.root_volume_gb,
                    encryption_at_host=storage.encryption_at_host,
                    user_data=user_data,
                    admin_ssh_public_key=spec.admin_ssh_public_key,
                    terminate_notice=notice,
                    tags=tags,
                    image_tags=image_tags(spec.image, entry) if entry else {},
                    deployer=(client.object_id, spec.identity.deployer_principal_type),
                    subscription_id=client.subscription_id,
                ),
                opts=child,
            )
            node_group = groups[group.name]
            group_opts = pulumi.ResourceOptions(parent=node_group)
            if monitoring.gpu_metrics and principal_id is not None:
                grant_metrics_publisher(f"{name}-{group.name}", node_group.scale_set_id, principal_id,
                                        client.subscription_id, group_opts)
            if alarms is not None and target is not None:
                group_alerts(f"{name}-{group.name}", resolved_group.names["scaling_group"], node_group.scale_set_id,
                             alarms.low_utilisation, group_name, target, tags, group_opts)

        self.resource_group_name = group_name
        self.vnet_id = network.vnet_id
        self.subnet_id = network.subnet_id
        self.scale_set_ids = {n: g.scale_set_id for n, g in groups.items()}
        self.disk_encryption_set_id = encryption.disk_encryption_set_id
        self.key_id = encryption.key_id
        self.identity_id = identity_id
        self.action_group_id = target
        self.register_outputs(self.exports())

    def _shared_file_system(
        self, resolved: ResolvedCluster, network: AzureNetwork, encryption: AzureDiskEncryption,
        group_name: pulumi.Input[str], client: pulumi.Output[authorization.GetClientConfigResult],
        tags: dict[str, str], opts: pulumi.ResourceOptions,
    ) -> pulumi.Output[SharedMount] | None:
        """Azure Managed Lustre and its mount, or None without storage.shared (the checks made sure it fits)."""
        spec = resolved.spec
        shared, cidr = spec.storage.shared, spec.network.cidr
        self.shared_file_system_id = None
        if shared is None or cidr is None or network.vnet_name is None or network.nat_gateway_id is None:
            return None
        catalog = resolved.catalog
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
                protect=spec.environment == "prod", tags=tags,
            ),
            int(catalog.limit("azure", "amlfs_key_size")),
            opts,
        )
        self.shared_file_system_id = storage.file_system_id
        return storage.mgs_address.apply(
            lambda address: SharedMount(dns_name=address, mount_name=FILESYSTEM_NAME, mount=shared.mount)
        )

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
        }
