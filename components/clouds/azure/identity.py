"""The nodes' identity: one user-assigned managed identity per cluster, holding only Storage Blob Data Reader
on the blob containers the stack names and Monitoring Metrics Publisher where its metrics go. No role at
subscription or resource-group scope (the pattern of Azure CycleCloud Slurm Workspace's node identity)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import authorization, managedidentity

from .storage import role_definition_id

# Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
STORAGE_BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
MONITORING_METRICS_PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"
# The custom metrics namespace gpufleet-gpu-health publishes in (alerts and autoscale read the same).
METRICS_NAMESPACE = "gpufleet"


def brought_principal_id(identity_id: str, opts: pulumi.InvokeOutputOptions) -> pulumi.Output[str]:
    """The object id of a brought user-assigned identity (its resource id names its group and name), read with
    Managed Identity's Get: what a role assignment names. Read in the provider's subscription."""
    # /subscriptions/S/resourceGroups/RG/providers/Microsoft.ManagedIdentity/userAssignedIdentities/NAME
    # (stack_model.IDENTITY_ID made sure of the shape).
    parts = identity_id.split("/")
    found = managedidentity.get_user_assigned_identity_output(
        resource_group_name=parts[4], resource_name=parts[8], opts=opts
    )
    return found.principal_id


def grant_metrics_publisher(
    name: str, scale_set_id: pulumi.Input[str], principal_id: pulumi.Input[str],
    subscription_id: pulumi.Input[str], opts: pulumi.ResourceOptions,
) -> authorization.RoleAssignment:
    """Monitoring Metrics Publisher on one scale set: the nodes publish custom metrics of their own scale set,
    nowhere else (Azure Monitor custom metrics REST API: the role at the scope of the resource the metrics are for)."""
    return authorization.RoleAssignment(
        f"{name}-metrics",
        scope=scale_set_id,
        principal_id=principal_id,
        principal_type="ServicePrincipal",
        role_definition_id=role_definition_id(subscription_id, MONITORING_METRICS_PUBLISHER),
        description="the nodes publish GPU metrics of their own scale set",
        opts=opts,
    )


@dataclass(frozen=True)
class NodeIdentityArgs:
    """Inputs of AzureNodeIdentity."""

    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    blob_read_containers: list[str] = field(default_factory=list)
    """Container resource ids: Storage Blob Data Reader on each."""
    metrics_scope: str | None = None
    """Resource id of the Data Collection Rule or workspace: Monitoring Metrics Publisher there."""
    tags: dict[str, str] = field(default_factory=dict)


def _short(scope: str) -> str:
    """A stable suffix naming one scope in a logical name (ids are too long and full of slashes)."""
    return hashlib.sha256(scope.encode()).hexdigest()[:8]


class AzureNodeIdentity(pulumi.ComponentResource):
    identity_id: pulumi.Output[str]
    principal_id: pulumi.Output[str]
    client_id: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:azure:NodeIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-id",
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=args.tags,
            opts=child,
        )
        grants = [(scope, STORAGE_BLOB_DATA_READER, "read") for scope in args.blob_read_containers]
        if args.metrics_scope:
            grants.append((args.metrics_scope, MONITORING_METRICS_PUBLISHER, "metrics"))
        for scope, role, what in grants:
            authorization.RoleAssignment(
                f"{name}-{what}-{_short(scope)}",
                scope=scope,
                principal_id=identity.principal_id,
                principal_type="ServicePrincipal",
                role_definition_id=role_definition_id(args.subscription_id, role),
                opts=child,
            )
        self.identity_id = identity.id
        self.principal_id = identity.principal_id
        self.client_id = identity.client_id
        self.register_outputs({"identity_id": self.identity_id, "client_id": self.client_id})
