"""What one step of the Azure cluster (cluster.py) hands the next: the client, the resource group, the node
identity and the shared file system, created or brought."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization

from ...bootstrap.operations import SharedMount

Client = pulumi.Output[authorization.GetClientConfigResult]


@dataclass(frozen=True)
class ClusterResourceGroup:
    """The group every resource of the cluster goes in, created or brought."""

    name: pulumi.Output[str]
    id: pulumi.Output[str]


@dataclass(frozen=True)
class NodeIdentity:
    """What the nodes run as."""

    identity_id: pulumi.Output[str]
    principal_id: pulumi.Output[str]
    """Created or brought, the identity's object id: the metrics role goes to it."""


@dataclass(frozen=True)
class SharedFileSystem:
    """The file system and the mount every node renders once its address is known."""

    file_system_id: pulumi.Output[str]
    mount: pulumi.Output[SharedMount]
