"""What an AKS stack needs of the subscription beyond the VM checks: an API server the deployer reaches
(scheduler.endpoint), and the AKSInfinibandSupport feature where a node group runs InfiniBand.

The endpoint is read as EKS's is (preflight/aws/account.py check_endpoint): Managed Clusters - Get of the cluster the
stack names, its `fqdn` for a public endpoint, its `privateFQDN` for a private cluster (azure-rest-api-specs
Microsoft.ContainerService/aks stable managedClusters.json, ManagedClusterProperties fqdn / privateFQDN), then
/healthz from here (preflight/endpoint.py).

The GPU quota of each agent pool is the VM quota check's (compute.py): one pool per node group, counted at size.max
against its VM family (Regular) or the regional Spot quota, as the scale sets of the VM path.

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
from .clients import AzureClients, ask_or_missing

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

NAMESPACE = "Microsoft.ContainerService"
INFINIBAND_FEATURE = "AKSInfinibandSupport"


def aks_checks(clients: AzureClients, cluster: ResolvedCluster) -> list[Check]:
    """The endpoint check of an AKS stack, and the feature check where a group runs InfiniBand; nothing for VM
    stacks."""
    if cluster.spec.scheduler.kind != "kubernetes":
        return []
    checks: list[Check] = [lambda: check_endpoint(clients, cluster)]
    infiniband = [group for group in cluster.groups if group.rdma and group.fabric == "infiniband"]
    if infiniband:
        field, names = infiniband[0].path("rdma"), ", ".join(group.name for group in infiniband)
        checks.append(lambda: list(_infiniband_feature(clients, field, names)))
    return checks


def check_endpoint(clients: AzureClients, cluster: ResolvedCluster) -> list[Finding]:
    """The AKS API server's FQDN for the stack's endpoint resolves and /healthz answers from here (a note before the
    cluster exists)."""
    from gpufleet.clouds.azure.names import aks_cluster_name, resource_group_name

    from ..endpoint import not_created, probe

    spec = cluster.spec
    group = resource_group_name(spec.name, spec.environment, spec.region, spec.network.resource_group)
    name = aks_cluster_name(spec.name, spec.environment)
    found = ask_or_missing(clients, f"AKS cluster {name} in resource group {group}",
                           lambda: clients.containers.managed_clusters.get(group, name))
    access = spec.scheduler.endpoint
    fqdn = found and (found.fqdn if access == "public" else found.private_fqdn)
    if not fqdn:
        return [not_created("azure", name)]
    return probe("azure", f"https://{fqdn}", access)


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
