"""The Azure GPU cluster: resource group, network, disk encryption, node identity, one scale set per group."""

from __future__ import annotations

import pulumi
from pulumi_azure_native import authorization, compute, resources

from ...bootstrap import render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...lock.status import image_tags
from ...resolve import ResolvedCluster
from ...tags import resource_tags
from .identity import AzureNodeIdentity, NodeIdentityArgs
from .lifecycle import HEALTH_PORT, terminate_notice
from .network import AzureNetwork, AzureNetworkArgs
from .nodegroup import AzureNodeGroup, NodeGroupArgs
from .storage import AzureDiskEncryption, DiskEncryptionArgs


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
    from ...program import running_offline

    if resolved.spec.admin_ssh_public_key is None and not running_offline():
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

    def __init__(self, resolved: ResolvedCluster, opts: pulumi.ResourceOptions | None = None) -> None:
        spec, lock = resolved.spec, resolved.lock
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
        else:
            group_name = resources.ResourceGroup(
                f"{name}-rg",
                resource_group_name=f"gpufleet-{name}-{spec.environment}",
                location=location,
                tags=tags,
                opts=child,
            ).name

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
        if spec.identity.identity_id:
            identity_id: pulumi.Output[str] = pulumi.Output.from_input(spec.identity.identity_id)
        else:
            identity_id = AzureNodeIdentity(
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
            ).identity_id

        entry = lock.image_entry(spec.image, "azure", spec.region)  # the spec check made sure it exists
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
                    disk_key_access=encryption.key_role_assignment,
                    root_volume_gb=storage.root_volume_gb,
                    encryption_at_host=storage.encryption_at_host,
                    user_data=render_user_data(bootstrap),
                    admin_ssh_public_key=spec.admin_ssh_public_key,
                    terminate_notice=notice,
                    tags=tags,
                    image_tags=image_tags(spec.image, entry) if entry else {},
                ),
                opts=child,
            )

        self.resource_group_name = group_name
        self.vnet_id = network.vnet_id
        self.subnet_id = network.subnet_id
        self.scale_set_ids = {n: g.scale_set_id for n, g in groups.items()}
        self.disk_encryption_set_id = encryption.disk_encryption_set_id
        self.key_id = encryption.key_id
        self.identity_id = identity_id
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
        }
