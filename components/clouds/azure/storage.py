"""Disk encryption under a customer-managed key: a Key Vault and an RSA key with a rotation policy (or a brought
key), and the Disk Encryption Set every OS and data disk references.

The DES's own (system-assigned) identity holds exactly one role, Key Vault Crypto Service Encryption User,
scoped to the key alone. The vault denies the data plane from every network except trusted Azure services
(the DES); gpufleet creates the key through Azure Resource Manager, so the deployer still manages it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, compute, keyvault
from pulumiverse_time import Sleep, Static

from gpufleet.clouds.azure.names import NAMES, VAULT
from gpufleet.clouds.naming import fit

# Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
CRYPTO_SERVICE_ENCRYPTION_USER = "e147488a-f6f5-4113-8e2d-b22465e65bf6"
KEY_SIZE = 3072  # RSA 2048/3072/4096 are what Azure disk encryption accepts
ROTATE_AFTER = "P1Y"  # a new key version each year; the DES follows it within an hour
KEY_EXPIRES_AFTER = "P2Y"  # every version expires, a year after its successor exists
SOFT_DELETE_DAYS = 90
# Azure Resource Manager caches role assignments: "it can take up to 10 minutes for changes to take effect"
# (learn.microsoft.com/azure/role-based-access-control/troubleshooting, "Role assignment changes are not being
# detected"). ARM answers the assignment's PUT at once, so the engine would create what needs the role while
# the service still refuses it; a create that needs a role waits this long after the assignment.
RBAC_PROPAGATION = "10m"


def role_definition_id(subscription_id: pulumi.Input[str], role: str) -> pulumi.Output[str]:
    """The subscription-qualified id of a built-in role, as role assignments take it."""
    return pulumi.Output.concat(
        "/subscriptions/", subscription_id, "/providers/Microsoft.Authorization/roleDefinitions/", role
    )


def propagated(
    name: str, role: authorization.RoleAssignment | authorization.RoleDefinition, opts: pulumi.ResourceOptions
) -> Sleep:
    """A wait of RBAC_PROPAGATION after the assignment (or custom role definition) exists: what needs it depends on
    this, not on it. A replaced one (new id) waits again; azure-native has no wait of its own for this. A custom role
    is replicated like an assignment ("Role assignment changes are not being detected" covers role definitions
    too), so an assignment of it waits here first, or ARM refuses it as a role that does not exist."""
    key = "role_definition_id" if isinstance(role, authorization.RoleDefinition) else "role_assignment_id"
    return Sleep(
        f"{name}-propagated",
        create_duration=RBAC_PROPAGATION,
        triggers={key: role.id},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role])),
    )


def key_scope(vault_id: pulumi.Input[str], key_url: str) -> pulumi.Output[str]:
    """The resource id of a brought key (its vault's id and the key name of its URL), where a role on it goes."""
    return pulumi.Output.concat(vault_id, "/keys/", key_url.split("/keys/", 1)[1].split("/")[0])


@dataclass(frozen=True)
class DiskEncryptionArgs:
    """Inputs of AzureDiskEncryption."""

    resource_group_name: pulumi.Input[str]
    location: str
    tenant_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    protect: bool
    """Prod: the vault, key and DES cannot be deleted by a `pulumi destroy`."""
    tags: dict[str, str]
    environment: str
    """The stack's environment: two environments of one cluster (one brought resource group) get two vaults."""
    key_url: str | None = None
    """Brought: a Key Vault key id with its version; None creates the vault and key."""
    key_vault_id: str | None = None
    """Brought: the resource id of the vault holding key_url."""
    data_plane_subnet_id: pulumi.Input[str] | None = None
    """scheduler slurm: the node subnet, whose machines read and write the munge key's secret in the created vault
    (through its Microsoft.KeyVault service endpoint, network.py)."""


def _vault_network(subnet_id: pulumi.Input[str] | None) -> keyvault.NetworkRuleSetArgs:
    """Trusted Azure services only, plus the node subnet where the nodes read a secret (Slurm's munge key)."""
    return keyvault.NetworkRuleSetArgs(
        default_action="Deny", bypass="AzureServices",
        virtual_network_rules=[keyvault.VirtualNetworkRuleArgs(id=subnet_id)] if subnet_id is not None else None,
    )


def _vault_and_key(
    name: str, args: DiskEncryptionArgs, opts: pulumi.ResourceOptions
) -> tuple[keyvault.Vault, keyvault.Key]:
    """A vault open to trusted Azure services only, and an RSA key in it that rotates yearly."""
    common = {"resource_group_name": args.resource_group_name, "tags": args.tags}
    # Destroying the vault leaves it soft-deleted for SOFT_DELETE_DAYS, and purge protection forbids purging it, so
    # a deterministic name would make `pulumi destroy` then `pulumi up` fail with 409 for 90 days. The name carries
    # the moment it was first created, kept in state by a time_static (its id is the RFC 3339 creation time:
    # hashicorp/terraform-provider-time internal/provider/resource_time_static.go, Create), which a destroy removes
    # with the vault, so the next `up` asks for a new name.
    created = Static(f"{name}-kv-created", opts=opts)
    vault = keyvault.Vault(
        f"{name}-kv",
        # Globally unique (a DNS name) and at most 24 characters: azure-native's autoname (the logical name and 8
        # random characters) overflows it, so the name is derived to fit, with the hash of the region,
        # environment, subscription, resource group and creation time.
        vault_name=pulumi.Output.all(args.subscription_id, args.resource_group_name, created.id).apply(
            lambda ids: fit(name, NAMES.limit(VAULT, "vaultName"), args.location, args.environment, *ids)
        ),
        location=args.location,
        properties=keyvault.VaultPropertiesArgs(
            tenant_id=args.tenant_id,
            sku=keyvault.SkuArgs(family="A", name="standard"),
            enable_soft_delete=True,
            soft_delete_retention_in_days=SOFT_DELETE_DAYS,
            enable_purge_protection=True,  # irreversible; Azure requires it for disk encryption keys
            enable_rbac_authorization=True,
            network_acls=_vault_network(args.data_plane_subnet_id),
        ),
        **common,
        # A stack made before the creation time joined the name keeps the name it has (a new name would replace
        # the vault and its keys); the name is chosen once, at create.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["vaultName"])),
    )
    key = keyvault.Key(
        f"{name}-disks",
        key_name="gpufleet-disks",
        vault_name=vault.name,
        properties=keyvault.KeyPropertiesArgs(
            kty="RSA",
            key_size=KEY_SIZE,
            key_ops=["wrapKey", "unwrapKey"],
            rotation_policy=keyvault.RotationPolicyArgs(
                attributes=keyvault.KeyRotationPolicyAttributesArgs(expiry_time=KEY_EXPIRES_AFTER),
                lifetime_actions=[
                    keyvault.LifetimeActionArgs(
                        trigger=keyvault.TriggerArgs(time_after_create=ROTATE_AFTER),
                        action=keyvault.ActionArgs(type="rotate"),
                    )
                ],
            ),
        ),
        **common,
        opts=opts,
    )
    return vault, key


def _encryption_set(name: str, args: DiskEncryptionArgs, key_url: pulumi.Input[str], vault_id: pulumi.Input[str],
                    opts: pulumi.ResourceOptions) -> compute.DiskEncryptionSet:
    """The Disk Encryption Set on the key, following its newest version, with its own identity."""
    common = {"resource_group_name": args.resource_group_name, "tags": args.tags}
    return compute.DiskEncryptionSet(
        f"{name}-des",
        location=args.location,
        encryption_type="EncryptionAtRestWithCustomerKey",
        identity=compute.EncryptionSetIdentityArgs(type="SystemAssigned"),
        active_key=compute.KeyForDiskEncryptionSetArgs(
            key_url=key_url, source_vault=compute.SourceVaultArgs(id=vault_id)
        ),
        rotation_to_latest_key_version_enabled=True,
        **common,
        opts=opts,
    )


class AzureDiskEncryption(pulumi.ComponentResource):
    """`disk_encryption_set_id` is what every disk references; `key_access` is the wait after the DES's role on
    the key, which every disk's create depends on."""

    disk_encryption_set_id: pulumi.Output[str]
    key_id: pulumi.Output[str]
    """The key: its resource id when created, its key URL when brought."""
    key_access: Sleep
    vault_id: pulumi.Output[str]
    """The vault holding the key, created or brought."""
    vault_name: pulumi.Output[str] | None
    """The created vault's name; None with a brought key."""

    def __init__(self, name: str, args: DiskEncryptionArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:azure:DiskEncryption", name, None, opts)
        kept = pulumi.ResourceOptions(parent=self, protect=args.protect)
        if args.key_url is None:
            vault, key = _vault_and_key(name, args, kept)
            key_url: pulumi.Input[str] = key.key_uri_with_version
            vault_id: pulumi.Input[str] = vault.id
            # The role is scoped to the key's resource id, not the vault: the DES reaches no other key.
            scope: pulumi.Input[str] = key.id
            self.key_id = key.id
            self.vault_name = vault.name
        else:
            key_url, vault_id = args.key_url, args.key_vault_id or ""
            scope = key_scope(vault_id, args.key_url)
            self.key_id = pulumi.Output.from_input(args.key_url)
            self.vault_name = None
        self.vault_id = pulumi.Output.from_input(vault_id)
        des = _encryption_set(name, args, key_url, vault_id, kept)
        key_role_assignment = authorization.RoleAssignment(
            f"{name}-des-key",
            scope=scope,
            principal_id=des.identity.apply(lambda identity: identity.principal_id if identity else None),
            principal_type="ServicePrincipal",
            role_definition_id=role_definition_id(args.subscription_id, CRYPTO_SERVICE_ENCRYPTION_USER),
            description="the Disk Encryption Set wraps and unwraps disk keys with this key only",
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The DES unwraps the key only once the role has propagated; a disk created before fails.
        self.key_access = propagated(f"{name}-des-key", key_role_assignment, pulumi.ResourceOptions(parent=self))
        self.disk_encryption_set_id = des.id
        self.register_outputs({"disk_encryption_set_id": self.disk_encryption_set_id, "key_id": self.key_id})
