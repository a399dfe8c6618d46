"""The Slurm head node's identity and the nodes' share of the munge key, least privilege.

The head node: a user-assigned identity of its own holding custom roles, each with only the operations its scripts and
programs call. The munge key's role (data actions of Key Vault's RBAC: Get Secret and Set Secret, learn.microsoft
.com/azure/role-based-access-control/permissions/security, "Microsoft.KeyVault": vaults/secrets/getSecret/action,
vaults/secrets/setSecret/action) is assigned on the secret's own scope; the scaling role (Microsoft.Compute:
virtualMachineScaleSets/read for Get, /write for Update's PATCH of sku.capacity, /delete/action for Delete Instances,
components/clouds/azure/slurm_capacity.py) on each of the cluster's scale sets; where a group is a Flexible scale set,
the VMs' own read, write and delete on the cluster's resource group as well (grant_scaling). The nodes' identity gets
the built-in Key Vault Secrets User on that secret only. The stack's vault is authorised by Azure RBAC (storage.py,
enable_rbac_authorization), so no access policy is involved.

A custom role's assignable scopes are management groups, subscriptions or resource groups (custom-roles.md,
"AssignableScopes"): the roles are defined on the cluster's resource group and assigned on narrower scopes, but for the
Flexible sets' VMs, which have no narrower common scope.

The secret's scope exists before anything is assigned on it: the deploy creates the secret empty (munge_secret), as an
ARM resource the assignments depend on, and the head node's first boot sets the key as a new version over Key Vault's
data plane (scripts/slurm-azure.sh reads an empty value as no key stored). A vault-wide assignment narrowed by a
condition is not available: role assignment conditions take Blob and Queue Storage data actions only
(MicrosoftDocs/azure-docs articles/role-based-access-control/conditions-role-assignments-portal.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, keyvault, managedidentity

from components import runtime
from gpufleet.clouds.naming import fit

from .image_pipeline import ROLE_NAME_MAX
from .storage import propagated, role_definition_id

MUNGE_SECRET_NAME = "slurm-munge-key"
# What the head node sets the key as (scripts/slurm-azure.sh munge_key_store: the binary key base64).
MUNGE_CONTENT_TYPE = "application/octet-stream;base64"
HEAD_SECRET_DATA_ACTIONS = ("Microsoft.KeyVault/vaults/secrets/getSecret/action",
                            "Microsoft.KeyVault/vaults/secrets/setSecret/action")
SCALE_SET_ACTIONS = ("Microsoft.Compute/virtualMachineScaleSets/read",
                     "Microsoft.Compute/virtualMachineScaleSets/write",
                     "Microsoft.Compute/virtualMachineScaleSets/delete/action")
# A Flexible scale set manages standard VMs, so its operations need the VMs' permissions as well as the scale set's:
# "RBAC Permissions Required: Compute Virtual Machine Scale Sets Write, Compute VM Write, Network" for Flexible and
# "Compute Virtual Machine Scale Sets Write" for Uniform (MicrosoftDocs/azure-compute-docs @f3e2a1e5 articles/
# virtual-machine-scale-sets/virtual-machine-scale-sets-orchestration-modes.md, "Basic setup"). Its VMs are resources
# of the resource group (Microsoft.Compute/virtualMachines/<name>), not children of the scale set, so the role goes on
# the group.
FLEXIBLE_VM_ACTIONS = ("Microsoft.Compute/virtualMachines/read",
                       "Microsoft.Compute/virtualMachines/write",
                       "Microsoft.Compute/virtualMachines/delete")
# Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles/security).
KEY_VAULT_SECRETS_USER = "4633458b-17de-408a-b874-0445c86b69e6"
EMPTY_SECRET_UNCONFIRMED = (
    "unconfirmed: the munge key's secret is created empty through ARM (Secrets - Create Or Update, whose value is "
    "optional: azure-rest-api-specs keyvault/resource-manager/Microsoft.KeyVault/stable/2024-11-01/secrets.json "
    "SecretProperties) so its role assignments have a scope; that Key Vault stores an empty value is reported for its "
    "data plane (james-gould/azure-keyvault-emulator #386), not confirmed on an account through ARM")
SCALE_OUT_UNCONFIRMED = (
    "unconfirmed: the head node's scaling role holds the scale sets' read, write and delete-instances actions, and the "
    "VMs' read, write and delete where a group is a Flexible scale set; which Network actions (Azure lists 'Network' "
    "among a Flexible set's required permissions) and whether the nodes' identity's assign action are checked on a "
    "scale-out is not confirmed on an account")


def munge_secret(name: str, group_name: pulumi.Input[str], vault_name: pulumi.Input[str],
                 opts: pulumi.ResourceOptions) -> keyvault.Secret:
    """The munge key's secret, empty: the scope of the roles on it (an assignment's scope must exist). Its value is
    the empty string in state; the head node sets the key as a new version at first boot. properties and tags are
    ignored after create: an update is a PUT of the whole secret, which would make the empty value current again."""
    runtime.warn_unconfirmed("scheduler.head_node", EMPTY_SECRET_UNCONFIRMED)
    return keyvault.Secret(
        f"{name}-munge-key", resource_group_name=group_name, vault_name=vault_name, secret_name=MUNGE_SECRET_NAME,
        properties=keyvault.SecretPropertiesArgs(value="", content_type=MUNGE_CONTENT_TYPE),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["properties", "tags"])))


def _custom_role(name: str, what: str, group_id: pulumi.Output[str], description: str,
                 permission: authorization.PermissionArgs,
                 opts: pulumi.ResourceOptions) -> authorization.RoleDefinition:
    return authorization.RoleDefinition(
        f"{name}-{what}-role",
        scope=group_id,
        assignable_scopes=[group_id],
        # Unique in the tenant: the hash of the resource group id keeps it this cluster's.
        role_name=group_id.apply(lambda gid: fit(f"gpufleet {name} {what}", ROLE_NAME_MAX, gid)),
        description=description,
        role_type="CustomRole",
        permissions=[permission],
        opts=opts,
    )


def _assign(name: str, role: authorization.RoleDefinition | pulumi.Output[str], scope: pulumi.Input[str],
            principal_id: pulumi.Input[str], description: str, opts: pulumi.ResourceOptions,
            ready: pulumi.Resource | None = None) -> authorization.RoleAssignment:
    return authorization.RoleAssignment(
        name, scope=scope, principal_id=principal_id, principal_type="ServicePrincipal",
        role_definition_id=role.id if isinstance(role, authorization.RoleDefinition) else role,
        description=description,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ready] if ready else [])))


@dataclass(frozen=True)
class HeadIdentity:
    """The head node's identity, the wait after its munge key role, and its scaling role (assigned on the scale sets
    once they exist: grant_scaling)."""

    identity: managedidentity.UserAssignedIdentity
    munge_key_ready: pulumi.Resource
    scaling_role: authorization.RoleDefinition
    scaling_role_ready: pulumi.Resource


def head_identity(name: str, group_name: pulumi.Input[str], group_id: pulumi.Output[str], location: str,
                  munge_secret_id: pulumi.Input[str], tags: dict[str, str],
                  opts: pulumi.ResourceOptions) -> HeadIdentity:
    """The head node's identity, its munge key role on the secret (munge_secret's id) and its scaling role."""
    runtime.warn_unconfirmed("scheduler.head_node", SCALE_OUT_UNCONFIRMED)
    identity = managedidentity.UserAssignedIdentity(f"{name}-id", resource_group_name=group_name, location=location,
                                                    tags=tags, opts=opts)
    munge_role = _custom_role(name, "munge-key", group_id, "The Slurm head node reads and writes its munge key",
                              authorization.PermissionArgs(data_actions=list(HEAD_SECRET_DATA_ACTIONS)), opts)
    scaling_role = _custom_role(name, "scaling", group_id, "The Slurm head node resizes the cluster's scale sets",
                                authorization.PermissionArgs(actions=list(SCALE_SET_ACTIONS)), opts)
    # A custom role is assigned only once it has replicated (storage.propagated), and used once its assignment has.
    grant = _assign(f"{name}-munge-key", munge_role, munge_secret_id, identity.principal_id,
                    "the Slurm head node makes and reads the munge key, no other secret", opts,
                    propagated(f"{name}-munge-key-role", munge_role, opts))
    return HeadIdentity(identity, propagated(f"{name}-munge-key", grant, opts), scaling_role,
                        propagated(f"{name}-scaling-role", scaling_role, opts))


def grant_scaling(name: str, head: HeadIdentity, scale_set_ids: Mapping[str, pulumi.Input[str]],
                  flexible: bool, group_id: pulumi.Output[str], opts: pulumi.ResourceOptions) -> None:
    """The scaling role on each of the cluster's scale sets, by group name (the power programs' calls), and where
    `flexible` (a group is a Flexible scale set) the VMs' role on the cluster's resource group."""
    for group, scale_set_id in scale_set_ids.items():
        _assign(f"{name}-scaling-{group}", head.scaling_role, scale_set_id, head.identity.principal_id,
                "the Slurm power programs resize this scale set", opts, head.scaling_role_ready)
    if flexible:
        role = _custom_role(name, "flexible-vms", group_id,
                            "The Slurm head node's scale-out and Delete Instances on Flexible scale sets",
                            authorization.PermissionArgs(actions=list(FLEXIBLE_VM_ACTIONS)), opts)
        _assign(f"{name}-flexible-vms", role, group_id, head.identity.principal_id,
                "the Slurm power programs add and delete the VMs of the Flexible scale sets", opts,
                propagated(f"{name}-flexible-vms-role", role, opts))


def grant_nodes_munge_key(name: str, munge_secret_id: pulumi.Input[str], principal_id: pulumi.Input[str],
                          subscription_id: pulumi.Input[str], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """Key Vault Secrets User on the munge key's secret (munge_secret's id) for the nodes' identity; returns the wait
    after it."""
    grant = _assign(f"{name}-munge-key-read", role_definition_id(subscription_id, KEY_VAULT_SECRETS_USER),
                    munge_secret_id, principal_id, "the Slurm nodes read the munge key, no other secret",
                    opts)
    return propagated(f"{name}-munge-key-read", grant, opts)
