"""Subscription setup the program assumes: each resource provider it creates resources of is registered, and the
EncryptionAtHost feature where the scale sets set securityProfile.encryptionAtHost.

Providers - Get (GET /subscriptions/{id}/providers/{namespace}: registrationState Registered, NotRegistered,
Registering, Unregistered; azure-rest-api-specs Microsoft.Resources GetProvider.json) and Features - Get (GET
/subscriptions/{id}/providers/Microsoft.Features/providers/{namespace}/features/{name}: properties.state;
Microsoft.Features/stable/2021-07-01/features.json). EncryptionAtHost must be registered before a VM or scale set
sets it (azure-compute-docs disks-enable-host-based-encryption-cli.md, Prerequisites).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..concurrent import Check
from ..findings import Finding
from .clients import AzureClients, ask

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster
    from gpufleet.stackfile import ImagesSpec

# VM Image Builder's providers (azure-compute-docs virtual-machines/linux/image-builder.md, "Register the providers"),
# and the identity the image stack creates for it (components/clouds/azure/image_pipeline.py).
IMAGE_PROVIDERS = ("Microsoft.VirtualMachineImages", "Microsoft.Compute", "Microsoft.KeyVault", "Microsoft.Storage",
                   "Microsoft.Network", "Microsoft.ContainerInstance", "Microsoft.ManagedIdentity")


def cluster_providers(cluster: ResolvedCluster) -> dict[str, str]:
    """Namespace -> the stack field whose resources need it, from what components/clouds/azure/cluster.py creates."""
    spec = cluster.spec
    needed = {
        "Microsoft.Compute": "node_groups",  # scale sets, the disk encryption set
        "Microsoft.Network": "network",  # the VNet and NAT gateway, or the nodes' network interfaces
        "Microsoft.KeyVault": "storage.kms_key",  # the created vault and key, or the brought one the DES reads
    }
    if not spec.identity.identity_id or spec.storage.shared is not None:
        # the nodes' identity (unless brought), the file system's identity
        needed["Microsoft.ManagedIdentity"] = "storage.shared" if spec.identity.identity_id else "identity"
    spot_restores = all(g.spec.spot and g.spec.idle is None for g in cluster.groups)
    if spec.monitoring.alarms is not None or spec.budget.alert_at_percent or not spot_restores:
        # autoscale settings (nodegroup.py), metric alerts and action groups (alarms.py)
        needed["Microsoft.Insights"] = "monitoring" if spec.monitoring.alarms is not None else "node_groups"
    if spec.budget.alert_at_percent:
        needed["Microsoft.Consumption"] = "budget.alert_at_percent"
    if spec.storage.shared is not None:
        needed["Microsoft.StorageCache"] = "storage.shared"  # Azure Managed Lustre
    if spec.scheduler.kind == "kubernetes":
        needed["Microsoft.ContainerService"] = "scheduler.kind"  # the AKS cluster and its agent pools
    return needed


def account_checks(clients: AzureClients, providers: dict[str, str], encryption_at_host: bool) -> list[Check]:
    checks: list[Check] = [lambda n=n, f=f: list(_provider(clients, n, f)) for n, f in providers.items()]
    if encryption_at_host:
        checks.append(lambda: list(_encryption_at_host(clients)))
    return checks


def cluster_account_checks(clients: AzureClients, cluster: ResolvedCluster) -> list[Check]:
    return account_checks(clients, cluster_providers(cluster), cluster.spec.storage.encryption_at_host)


def images_account_checks(clients: AzureClients, spec: ImagesSpec) -> list[Check]:
    return account_checks(clients, dict.fromkeys(IMAGE_PROVIDERS, "regions[0]"), False)


def _provider(clients: AzureClients, namespace: str, field: str) -> Iterator[Finding]:
    found = ask(clients, f"the registration of {namespace} (Providers - Get)",
                lambda: clients.resources.providers.get(namespace))
    state = str(found.registration_state or "NotRegistered")
    if state.lower() == "registered":
        return
    registering = state.lower() == "registering"
    yield Finding(
        "azure-provider", field, not registering,
        f"resource provider {namespace} is {state} in subscription {clients.subscription_id}",
        f"wait until `az provider show --namespace {namespace} --query registrationState` says Registered"
        if registering else f"az provider register --namespace {namespace} --wait",
    )


def feature_state(clients: AzureClients, namespace: str, name: str) -> str:
    """A subscription feature's registration state (Registered, NotRegistered, Pending, ...)."""
    found = ask(clients, f"the feature {namespace}/{name} (Features - Get)",
                lambda: clients.features.features.get(namespace, name))
    return str((found.properties.state if found.properties else None) or "NotRegistered")


def _encryption_at_host(clients: AzureClients) -> Iterator[Finding]:
    state = feature_state(clients, "Microsoft.Compute", "EncryptionAtHost")
    if state.lower() == "registered":
        return
    yield Finding(
        "azure-feature", "storage.encryption_at_host", True,
        f"feature Microsoft.Compute/EncryptionAtHost is {state} in subscription {clients.subscription_id}; the scale "
        "sets set encryptionAtHost",
        "az feature register --namespace Microsoft.Compute --name EncryptionAtHost, wait until `az feature show "
        "--namespace Microsoft.Compute --name EncryptionAtHost` says Registered, then az provider register "
        "--namespace Microsoft.Compute; or set storage.encryption_at_host: false",
    )
