"""The shared dataset file system: Azure Managed Lustre in the nodes' zone, in a subnet of its own carved from the
VNet's free half, encrypted with a customer key from the stack's vault (Azure Managed Lustre takes RSA 2048 only,
so a created vault gets a second key for it) that a user-assigned identity of the file system unwraps; the subnet's
security group admits Lustre only from the node subnet (and the file servers among themselves), plus the
AzureMonitor service tag the service needs, and denies everything else inbound.

The node groups mount it (components.bootstrap.operations.lustre_fstab_entry); the image carries the Lustre client
(images/install/lustre.sh).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
from pulumi_azure_native import authorization, keyvault, managedidentity, network, storagecache

from gpufleet.stackfile.models import SharedStorage

from .key_expiry import notify_key_near_expiry
from .lustre_sizes import Tier
from .storage import (
    CRYPTO_SERVICE_ENCRYPTION_USER,
    KEY_EXPIRES_AFTER,
    ROTATE_AFTER,
    key_scope,
    propagated,
    role_definition_id,
)

# Microsoft's network security group table for Azure Managed Lustre (amlfs-prerequisites, "Network security group
# settings"): Lustre traffic from the client subnet on TCP 988 (LNet) and 1019-1023 (the privileged ports Lustre
# connections use between clients and servers).
LUSTRE_PORTS = ("988", "1019-1023")
FILESYSTEM_NAME = "lustrefs"  # the Lustre file system name every Azure Managed Lustre mounts as
MAINTENANCE = storagecache.AmlFilesystemMaintenanceWindowArgs(day_of_week="Sunday", time_of_day_utc="02:00")
DENY_ALL_PRIORITY = 4096
# Key Vault notifies (Event Grid KeyNearExpiry) this long before the version in use expires: the file system does
# not move to a rotated version by itself (see _key), so its owner moves it in that window. The event reaches the
# stack's action group (key_expiry.py); a stack without one is told by its plan that nobody hears it.
NOTIFY_BEFORE_EXPIRY = "P30D"
KEY_NAME = "gpufleet-lustre"


@dataclass(frozen=True)
class LustreArgs:
    """Inputs of the file system and its network."""

    shared: SharedStorage
    tier: Tier
    resource_group_name: pulumi.Input[str]
    location: str
    zone: str
    vnet_name: pulumi.Input[str]
    nat_gateway_id: pulumi.Input[str]
    node_cidr: IPv4Network
    lustre_cidr: IPv4Network
    subscription_id: pulumi.Input[str]
    vault_name: pulumi.Input[str] | None
    """The created vault, where the file system's 2048-bit key is made; None with a brought key."""
    vault_id: pulumi.Input[str]
    brought_key_url: str | None
    """A brought key (it must be RSA 2048 for Azure Managed Lustre); None creates one in vault_name."""
    protect: bool
    tags: dict[str, str]
    alarm_target: pulumi.Input[str] | None
    """The action group a created key's near-expiry event alerts; None: nobody hears it (the plan says so)."""


def _rule(name: str, priority: int, source: str, port: str | tuple[str, ...], access: str = "Allow",
          protocol: str = "Tcp", destination: str = "*") -> network.SecurityRuleArgs:
    """One inbound rule; several ports go in destinationPortRanges (Azure takes a range or a list, not both)."""
    several = isinstance(port, tuple)
    return network.SecurityRuleArgs(
        name=name, priority=priority, direction="Inbound", access=access, protocol=protocol,
        source_address_prefix=source, source_port_range="*", destination_address_prefix=destination,
        destination_port_range=None if several else port, destination_port_ranges=list(port) if several else None,
    )


def lustre_security_group(name: str, args: LustreArgs, opts: pulumi.ResourceOptions) -> network.NetworkSecurityGroup:
    """azure-managed-lustre/configure-network-security-group.md's inbound rules, the Lustre client subnet being
    the node subnet; the final deny overrides Azure's default AllowVnetInBound."""
    lustre, nodes = str(args.lustre_cidr), str(args.node_cidr)
    rules = [
        _rule("lustre-servers", 110, lustre, "*", protocol="*", destination=lustre),
        _rule("lustre-from-nodes", 111, nodes, LUSTRE_PORTS, destination=lustre),
        _rule("azure-monitor", 112, "AzureMonitor", "*", destination="VirtualNetwork"),
        _rule("deny-all-inbound", DENY_ALL_PRIORITY, "*", "*", access="Deny", protocol="*"),
    ]
    return network.NetworkSecurityGroup(
        f"{name}-lustre", resource_group_name=args.resource_group_name, location=args.location,
        security_rules=rules, tags=args.tags, opts=opts,
    )


def _key(name: str, args: LustreArgs, key_size: int, opts: pulumi.ResourceOptions) -> tuple[
        pulumi.Input[str], pulumi.Input[str]]:
    """(key URL with its version, role scope) of the file system's key."""
    if args.brought_key_url is not None or args.vault_name is None:
        url = args.brought_key_url or ""
        return url, key_scope(args.vault_id, url)
    key = keyvault.Key(
        f"{name}-lustre",
        key_name=KEY_NAME,
        vault_name=args.vault_name,
        resource_group_name=args.resource_group_name,
        # The file system does not follow key versions: it is created with a versioned key URL, and its encryption
        # settings (ARM 2024-03-01, pulumi-azure-native 3.29.0 storagecache.AmlFilesystemEncryptionSettings) carry
        # only keyEncryptionKey, with no rotationToLatestKeyVersionEnabled as HPC Cache's CacheEncryptionSettings in
        # the same API has. So: a new version yearly (as the disk key), each version expiring two years after it
        # is made (the policy's expiryTime applies to new versions), and a notice 30 days before the version in use
        # expires; `pulumi refresh` then `pulumi up` moves the file system to the current version's URL.
        properties=keyvault.KeyPropertiesArgs(
            kty="RSA",
            key_size=key_size,
            key_ops=["wrapKey", "unwrapKey"],
            rotation_policy=keyvault.RotationPolicyArgs(
                attributes=keyvault.KeyRotationPolicyAttributesArgs(expiry_time=KEY_EXPIRES_AFTER),
                lifetime_actions=[
                    keyvault.LifetimeActionArgs(
                        trigger=keyvault.TriggerArgs(time_after_create=ROTATE_AFTER),
                        action=keyvault.ActionArgs(type="rotate"),
                    ),
                    keyvault.LifetimeActionArgs(
                        trigger=keyvault.TriggerArgs(time_before_expiry=NOTIFY_BEFORE_EXPIRY),
                        action=keyvault.ActionArgs(type="notify"),
                    ),
                ],
            ),
        ),
        tags=args.tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=args.protect)),
    )
    if args.alarm_target is not None:
        notify_key_near_expiry(name, args.vault_id, KEY_NAME, args.alarm_target, args.resource_group_name,
                               args.location, args.tags, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                   depends_on=[key])))
    return key.key_uri_with_version, key.id


class AzureSharedStorage(pulumi.ComponentResource):
    """The file system with its subnet, security group, key and identity; `mount` is what the nodes mount."""

    file_system_id: pulumi.Output[str]
    mgs_address: pulumi.Output[str]

    def __init__(self, name: str, args: LustreArgs, key_size: int, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:azure:SharedStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        nsg = lustre_security_group(name, args, child)
        subnet = network.Subnet(
            f"{name}-lustre",
            resource_group_name=args.resource_group_name,
            virtual_network_name=args.vnet_name,
            address_prefix=str(args.lustre_cidr),
            default_outbound_access=False,
            # The service reaches Azure services (AzureCloud) from its subnet: egress through the cluster's NAT.
            nat_gateway=network.SubResourceArgs(id=args.nat_gateway_id),
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            opts=child,
        )
        key_url, scope = _key(name, args, key_size, child)
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-lustre", resource_group_name=args.resource_group_name, location=args.location, tags=args.tags,
            opts=child,
        )
        key_access = authorization.RoleAssignment(
            f"{name}-lustre-key",
            scope=scope,
            principal_id=identity.principal_id,
            principal_type="ServicePrincipal",
            role_definition_id=role_definition_id(args.subscription_id, CRYPTO_SERVICE_ENCRYPTION_USER),
            description="the Lustre file system wraps and unwraps its keys with this key only",
            opts=child,
        )
        # The file system's create reads the key with this identity: it waits until the role has propagated.
        key_ready = propagated(f"{name}-lustre-key", key_access, child)
        file_system = storagecache.AmlFilesystem(
            f"{name}-fs",
            resource_group_name=args.resource_group_name,
            location=args.location,
            zones=[args.zone],
            sku=storagecache.SkuNameArgs(name=args.tier.sku),
            storage_capacity_ti_b=float(args.shared.capacity_tib),
            filesystem_subnet=subnet.id,
            maintenance_window=MAINTENANCE,
            identity=storagecache.AmlFilesystemIdentityArgs(
                type="UserAssigned", user_assigned_identities=[identity.id]
            ),
            encryption_settings=storagecache.AmlFilesystemEncryptionSettingsArgs(
                key_encryption_key=storagecache.KeyVaultKeyReferenceArgs(
                    key_url=key_url,
                    source_vault=storagecache.KeyVaultKeyReferenceSourceVaultArgs(id=args.vault_id),
                )
            ),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, depends_on=[key_ready]),
        )
        self.file_system_id = file_system.id
        self.mgs_address = file_system.client_info.apply(lambda info: info.mgs_address)
        self.register_outputs({"file_system_id": self.file_system_id, "mgs_address": self.mgs_address})
