"""What an AKS stack needs of the subscription beyond the VM checks: the AKSInfinibandSupport feature where a node
group runs InfiniBand. The GPU quota of each agent pool is the VM quota check's (compute.py): one pool per node group,
counted at size.max against its VM family (Regular) or the regional Spot quota, as the scale sets of the VM path.

AKS places an RDMA-enabled pool's VMs on one InfiniBand network only with the subscription feature
Microsoft.ContainerService/AKSInfinibandSupport registered (AKS docs use-amd-gpus.md, "Register the
AKSInfinibandSupport feature"; Azure/aks-rdma-infiniband README, Prerequisites: az feature register, then
az provider register --namespace Microsoft.ContainerService). Read with Features - Get, as account.py reads
EncryptionAtHost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..concurrent import Check
from ..findings import Finding
from .account import feature_state
from .clients import AzureClients

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

NAMESPACE = "Microsoft.ContainerService"
INFINIBAND_FEATURE = "AKSInfinibandSupport"


def aks_checks(clients: AzureClients, cluster: ResolvedCluster) -> list[Check]:
    """The feature check for an AKS stack with an InfiniBand group; nothing for VM stacks or pools without it."""
    if cluster.spec.scheduler.kind != "kubernetes":
        return []
    infiniband = [group for group in cluster.groups if group.rdma and group.fabric == "infiniband"]
    if not infiniband:
        return []
    field, names = infiniband[0].path("rdma"), ", ".join(group.name for group in infiniband)
    return [lambda: list(_infiniband_feature(clients, field, names))]


def _infiniband_feature(clients: AzureClients, field: str, groups: str) -> Iterator[Finding]:
    state = feature_state(clients, NAMESPACE, INFINIBAND_FEATURE)
    if state.lower() == "registered":
        return
    yield Finding(
        "azure-feature", field, True,
        f"feature {NAMESPACE}/{INFINIBAND_FEATURE} is {state} in subscription {clients.subscription_id}; without "
        f"it the InfiniBand agent pools ({groups}) are not placed on one InfiniBand network",
        f"az feature register --namespace {NAMESPACE} --name {INFINIBAND_FEATURE}, wait until `az feature show "
        f"--namespace {NAMESPACE} --name {INFINIBAND_FEATURE}` says Registered, then az provider register "
        f"--namespace {NAMESPACE}; or set rdma: off on the groups",
    )
