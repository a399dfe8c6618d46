"""What the stack brings instead of creating: the resource group, the nodes' identity, the disk key and its vault,
the alarm target, the blob containers the nodes read and the capacity reservation groups. Each exists, and where
Azure ties it to a place, is where the deploy needs it.

Read with Resource Groups - Get and Resources - Get By Id (GET {resource id}?api-version=...), whose body is the
resource type's own GET: the api-versions are those the deploy's azure-native resources use (pulumi_azure_native
docstrings "Uses Azure REST API version": keyvault 2024-11-01, managedidentity 2023-01-31, storage 2024-01-01,
compute capacity reservations 2024-11-01), action groups at their GA 2023-01-01 (azure-native uses a preview).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..concurrent import Check
from ..findings import Finding
from . import ids
from .clients import AzureClients, ask_or_missing

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

KEYVAULT_API = "2024-11-01"
IDENTITY_API = "2023-01-31"
ACTION_GROUP_API = "2023-01-01"
CONTAINER_API = "2024-01-01"
RESERVATION_API = "2024-11-01"
# Azure Managed Lustre takes RSA 2048 keys only (components/clouds/azure/shared_storage.py).
LUSTRE_KEY_BITS = 2048


def get_by_id(clients: AzureClients, what: str, resource_id: str, api_version: str) -> Any | None:
    return ask_or_missing(clients, what, lambda: clients.resources.resources.get_by_id(resource_id,
                                                                                      api_version=api_version))


def brought_checks(clients: AzureClients, cluster: ResolvedCluster) -> list[Check]:
    spec = cluster.spec
    checks: list[Check] = []
    if spec.network.resource_group:
        checks.append(lambda: list(_resource_group(clients, spec.network.resource_group)))
    if spec.identity.identity_id:
        checks.append(lambda: list(_exists(clients, "identity.identity_id", spec.identity.identity_id, IDENTITY_API,
                                           "user-assigned identity")))
    if spec.storage.kms_key != "create" and spec.storage.key_vault_id:
        checks.append(lambda: list(_disk_key(clients, cluster)))
    alarms = spec.monitoring.alarms
    if alarms is not None and cluster.alarm_target_mode == "bring":
        checks.append(lambda: list(_exists(clients, "monitoring.alarms.target", alarms.target, ACTION_GROUP_API,
                                           "action group")))
    for i, container in enumerate(spec.identity.blob_read_containers):
        checks.append(lambda i=i, c=container: list(_exists(
            clients, f"identity.blob_read_containers[{i}]", c, CONTAINER_API, "blob container")))
    for group in cluster.groups:
        if group.spec.capacity == "reservation" and group.spec.reservation_id:
            checks.append(lambda g=group: list(_reservation(clients, cluster, g)))
    return checks


def _resource_group(clients: AzureClients, name: str) -> Iterator[Finding]:
    found = ask_or_missing(clients, f"the resource group {name}", lambda: clients.resources.resource_groups.get(name))
    if found is None:
        yield Finding("azure-brought", "network.resource_group", True,
                      f"no resource group {name} in subscription {clients.subscription_id}",
                      f"create it (az group create -n {name} -l <region>), fix the name, or leave it unset so "
                      "gpufleet creates one")


def _exists(clients: AzureClients, field: str, resource_id: str, api_version: str, kind: str) -> Iterator[Finding]:
    if get_by_id(clients, f"the {kind} {resource_id}", resource_id, api_version) is None:
        yield Finding("azure-brought", field, True, f"no {kind} {resource_id} (or its resource group is gone)",
                      f"fix the id (`az resource show --ids ID` finds it) or create the {kind} first")


def _disk_key(clients: AzureClients, cluster: ResolvedCluster) -> Iterator[Finding]:
    """The vault: in the cluster's region (a Disk Encryption Set uses a vault of its own region: "Azure Key Vaults can
    be used from a different subscription but must be in the same region as the disk encryption set",
    learn.microsoft.com/azure/virtual-machines/disks-enable-customer-managed-keys-portal), with purge protection
    (required there too), holding kms_key; the key version: there, enabled, RSA of an accepted size."""
    storage, region = cluster.spec.storage, cluster.spec.region
    vault_id, key_url = storage.key_vault_id or "", storage.kms_key
    vault = get_by_id(clients, f"the Key Vault {vault_id}", vault_id, KEYVAULT_API)
    if vault is None:
        yield Finding("azure-key", "storage.key_vault_id", True, f"no Key Vault {vault_id}",
                      "fix the id (az keyvault show -n NAME --query id) or create the vault first")
        return
    props = vault.properties or {}
    if ids.region_key(vault.location or "") != ids.region_key(region):
        yield Finding("azure-key", "storage.key_vault_id", True,
                      f"the vault is in {vault.location}, the cluster in {region}; a disk encryption set takes a key "
                      "from a vault in its own region", f"bring a key from a vault in {region}")
    if not props.get("enablePurgeProtection"):
        yield Finding("azure-key", "storage.key_vault_id", True,
                      "the vault has purge protection off; disk encryption sets need soft delete and purge protection",
                      f"az keyvault update --ids {vault_id} --enable-purge-protection true (irreversible)")
    host = key_url.split("/")[2].lower() if key_url.count("/") >= 2 else ""
    vault_uri = str(props.get("vaultUri") or "")
    if vault_uri and host and host not in vault_uri.lower():
        yield Finding("azure-key", "storage.kms_key", True,
                      f"kms_key is a key of {host}, key_vault_id is the vault at {vault_uri}",
                      "give the vault that holds the key in key_vault_id, or a key of that vault in kms_key")
        return
    parts = key_url.rstrip("/").split("/")
    name, version = parts[-2], parts[-1]
    key = get_by_id(clients, f"the key {name} version {version}", f"{vault_id}/keys/{name}/versions/{version}",
                    KEYVAULT_API)
    if key is None:
        yield Finding("azure-key", "storage.kms_key", True, f"the vault has no key {name} with version {version}",
                      f"give an existing version: az keyvault key list-versions --vault-name {host.split('.')[0]} "
                      f"--name {name} --query '[].kid'")
        return
    key_props = key.properties or {}
    attributes = key_props.get("attributes") or {}
    if attributes.get("enabled") is False:
        yield Finding("azure-key", "storage.kms_key", True, f"key {name} version {version} is disabled",
                      "enable it, or give an enabled version")
    kty, bits = str(key_props.get("kty") or ""), key_props.get("keySize")
    if not kty.startswith("RSA"):
        yield Finding("azure-key", "storage.kms_key", True, f"key {name} is {kty or 'not RSA'}; disks take RSA keys",
                      "give an RSA key of 2048, 3072 or 4096 bits")
    elif cluster.spec.storage.shared is not None and bits and int(bits) != LUSTRE_KEY_BITS:
        yield Finding("azure-key", "storage.kms_key", True,
                      f"key {name} is RSA {bits}; Azure Managed Lustre (storage.shared) takes RSA "
                      f"{LUSTRE_KEY_BITS} only",
                      f"give an RSA {LUSTRE_KEY_BITS} key, or leave kms_key create (gpufleet then makes one for it)")


def _reservation(clients: AzureClients, cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[Finding]:
    """Capacity Reservation Groups - Get (properties.capacityReservations[].id, zones, location) and Capacity
    Reservations - Get (sku.name, sku.capacity, zones)."""
    field, region, size = group.path("reservation_id"), cluster.spec.region, group.spec.instance_types[0]
    group_id = group.spec.reservation_id or ""
    found = get_by_id(clients, f"the capacity reservation group {group_id}", group_id, RESERVATION_API)
    if found is None:
        yield Finding("azure-reservation", field, True, f"no capacity reservation group {group_id}",
                      "fix the id (az capacity reservation group list --query '[].id') or create it first")
        return
    if ids.region_key(found.location or "") != ids.region_key(region):
        yield Finding("azure-reservation", field, True, f"the reservation group is in {found.location}, the cluster "
                      f"in {region}", f"reserve capacity in {region}")
        return
    reserved = 0
    reservation_zones: set[str] = set()
    for ref in (found.properties or {}).get("capacityReservations") or []:
        rid = ref.get("id", "") if isinstance(ref, dict) else ""
        reservation = get_by_id(clients, f"the capacity reservation {rid}", rid, RESERVATION_API) if rid else None
        sku = (reservation.sku if reservation is not None else None)
        if sku is not None and (sku.name or "").lower() == size.lower():
            reserved += int(sku.capacity or 0)
            # GenericResource models no `zones`; the SDK's models are mappings of the JSON body, which has them.
            reservation_zones.update(reservation.get("zones") or [])
    if reserved == 0:
        yield Finding("azure-reservation", field, True, f"the reservation group reserves no {size}",
                      f"add a capacity reservation of {size} to the group, or use capacity: on-demand")
        return
    missing = [z for z in group.zones if reservation_zones and z not in reservation_zones]
    if missing:
        yield Finding("azure-reservation", field, True, f"the group's {size} reservations are in zones "
                      f"{', '.join(sorted(reservation_zones))}, the node group in {', '.join(missing)}",
                      "reserve in the node group's zones, or move the node group to the reserved ones")
    if reserved < group.spec.size.max:
        yield Finding("azure-reservation", group.path("size.max"), False,
                      f"the reservation group holds {reserved} x {size}; size.max is {group.spec.size.max}, so "
                      f"{group.spec.size.max - reserved} nodes would run outside the reservation's guarantee",
                      "raise the reservation's capacity, or lower size.max to it")
