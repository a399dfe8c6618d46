"""AKS rules: the managed cluster (Kubernetes secrets encrypted by KMS with a Key Vault key, API server private or
limited to named ranges, local accounts off with Entra ID RBAC, node OS disks on the stack's disk encryption set)
and its agent pools (no public IP per node; encryption at host, advisory as on the scale sets).

Input names are pulumi-azure-native v3's containerservice ManagedCluster and AgentPool (managed_cluster.py,
agent_pool.py, _inputs.py: securityProfile.azureKeyVaultKms {enabled, keyId}, apiServerAccessProfile
{enablePrivateCluster, authorizedIPRanges}, disableLocalAccounts, aadProfile {managed, enableAzureRBAC},
diskEncryptionSetID, agentPoolProfiles[] / AgentPool {enableNodePublicIP, enableEncryptionAtHost}), as the engine
hands them to the pack: camelCase. Defaults a missing input falls back to are the AKS API's: KMS off ("The default is
false"), a public API server with no authorized ranges (open to every address), local accounts on, no public IP per
node ("The default is false"), encryption at host off. Checkov ids are those of bridgecrewio/checkov's AKS checks
(CKV_AZURE_6 authorized ranges, 115 private cluster, 117 disk encryption set, 141 local admin disabled, 227
encryption at host).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.address_ranges import parse_range, too_wide

from ..meta import ADVISORY, MANDATORY, Config, Finding, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, as_bool, get, items
from .resource_types import DISK_ENCRYPTION_SET

MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"

# Built-in roles an AKS cluster's identity and its admins are granted, each allowed (azure-role-assignments-scoped)
# only on the kind of resource it belongs on, and only in a stack with an AKS cluster. Role ids from the built-in
# roles reference (learn.microsoft.com/azure/role-based-access-control/built-in-roles); what each is for: KMS with a
# key in a private vault needs Key Vault Crypto User on the key and Key Vault Contributor on the vault (AKS docs
# use-kms-etcd-encryption), a user-assigned identity needs Network Contributor on the subnets it joins (AKS docs
# api-server-vnet-integration, configure-azure-cni), admins get Azure Kubernetes Service RBAC Cluster Admin on the
# cluster (AKS docs manage-azure-rbac); Reader on the disk encryption set is read-only.
_ARM = r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
AKS_ROLES: dict[str, tuple[str, re.Pattern[str]]] = {
    "12338af0-0e69-4776-bea7-d2b8c9d0c5fe": (
        "Key Vault Crypto User", re.compile(_ARM + r"Microsoft\.KeyVault/vaults/[^/]+(/keys/[^/]+)?$", re.I)),
    "f25e0fa2-a7c8-4377-a976-54943a77a395": (
        "Key Vault Contributor", re.compile(_ARM + r"Microsoft\.KeyVault/vaults/[^/]+$", re.I)),
    "4d97b98b-1d4f-4787-a291-c67834d212e7": (
        "Network Contributor", re.compile(_ARM + r"Microsoft\.Network/virtualNetworks/[^/]+/subnets/[^/]+$", re.I)),
    "acdd72a7-3385-48ef-bd42-f606fba81ae7": (
        "Reader", re.compile(_ARM + r"Microsoft\.Compute/diskEncryptionSets/[^/]+$", re.I)),
    "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b": (
        "Azure Kubernetes Service RBAC Cluster Admin",
        re.compile(_ARM + r"Microsoft\.ContainerService/managedClusters/[^/]+$", re.I)),
}


def aks_role_allowed(stack: Stack, role_guid: str, scope: object) -> bool:
    """Whether a role assignment is one an AKS cluster of this stack needs, on the resource it belongs on."""
    allowed = AKS_ROLES.get(role_guid.lower())
    return (allowed is not None and isinstance(scope, str) and bool(allowed[1].match(scope))
            and bool(stack.of_type(MANAGED_CLUSTER)))


def check_kms_secrets(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    kms = get(props, "securityProfile", "azureKeyVaultKms")
    if kms is UNKNOWN:
        return
    enabled, key = as_bool(get(kms, "enabled")), get(kms, "keyId")
    if key is UNKNOWN:
        return
    if enabled is not True or not key:
        yield ("Kubernetes secrets are not encrypted by KMS with a Key Vault key: set security_profile."
               "azure_key_vault_kms = {enabled: True, key_id: <the stack's Key Vault key id>} (needs a "
               "user-assigned cluster identity)")


def check_api_server_private(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    access = get(props, "apiServerAccessProfile")
    private = get(access, "enablePrivateCluster")
    if access is UNKNOWN or private is UNKNOWN or as_bool(private) is True:
        return
    ranges = items(access, "authorizedIPRanges")
    if ranges is UNKNOWN or any(item is UNKNOWN for item in ranges):
        return
    if not ranges:
        yield ("the API server is public with no authorized IP ranges, open to every address: set "
               "api_server_access_profile.enable_private_cluster = True, or authorized_ip_ranges to the "
               "administrators' ranges")
        return
    nets = [net for item in ranges if (net := parse_range(item)) is not None]
    wide = too_wide(nets)
    if wide or len(nets) < len(ranges):
        reason = wide or "a range that does not parse"
        yield (f"the API server is public to {', '.join(map(str, ranges))}: {reason}; set "
               "api_server_access_profile.enable_private_cluster = True, or authorized_ip_ranges to the "
               "administrators' ranges")


def check_local_accounts_off(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    disabled, aad = get(props, "disableLocalAccounts"), get(props, "aadProfile")
    if disabled is not UNKNOWN and as_bool(disabled) is not True:
        yield ("local accounts are on (disable_local_accounts is not True): the cluster-admin kubeconfig they give "
               "bypasses Entra ID; set disable_local_accounts = True")
    if aad is UNKNOWN:
        return
    managed, rbac = get(aad, "managed"), get(aad, "enableAzureRBAC")
    if managed is UNKNOWN or rbac is UNKNOWN:
        return
    if as_bool(managed) is not True or as_bool(rbac) is not True:
        yield ("Entra ID RBAC is off: set aad_profile = {managed: True, enable_azure_rbac: True} so access to the "
               "cluster is granted by Azure role assignments")


def _no_public_ip(where: str, pool: Any) -> Iterator[str]:
    public = get(pool, "enableNodePublicIP")
    if public is not UNKNOWN and as_bool(public) is True:
        yield f"{where} gives every node a public IP: set enable_node_public_ip = False (nodes egress through NAT)"


def _encrypted_at_host(where: str, pool: Any) -> Iterator[str]:
    host = get(pool, "enableEncryptionAtHost")
    if host is not UNKNOWN and as_bool(host) is not True:
        yield (f"{where} does not encrypt at host (temp disk and disk caches unencrypted): set "
               "enable_encryption_at_host = True (the subscription feature Microsoft.Compute/EncryptionAtHost)")


def _pools(resource_type: str, props: Props) -> Iterator[tuple[str, Any]]:
    """(where, pool) of an AgentPool, or of each pool a ManagedCluster declares in agentPoolProfiles."""
    if resource_type == AGENT_POOL:
        yield "the agent pool", props
        return
    pools = items(props, "agentPoolProfiles")
    for index, pool in enumerate(pools if isinstance(pools, list) else []):
        name = get(pool, "name")
        yield f"agentPoolProfiles[{index}]" + (f" ({name})" if isinstance(name, str) else ""), pool


def check_no_node_public_ip(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    for where, pool in _pools(resource_type, props):
        yield from _no_public_ip(where, pool)


def check_encryption_at_host(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    for where, pool in _pools(resource_type, props):
        yield from _encrypted_at_host(where, pool)


def _names_a_stack_des(stack: Stack, cluster: Any, value: Any, sets: list[Any]) -> bool:
    """Whether diskEncryptionSetID names one of the stack's disk encryption sets: by the dependency the engine
    recorded for the input, else by the set's id."""
    urns = cluster.property_dependencies.get("diskEncryptionSetID")
    if urns:
        return any(stack.by_urn.get(urn) in sets for urn in urns)
    return any(get(des.props, "id") == value for des in sets)


def check_cluster_des(stack: Stack, config: Config) -> Iterator[Finding]:
    sets = stack.of_type(DISK_ENCRYPTION_SET)
    for cluster in stack.of_type(MANAGED_CLUSTER):
        value = get(cluster.props, "diskEncryptionSetID")
        if value is UNKNOWN:
            continue
        if not value:
            yield cluster.urn, ("the node OS disks have no disk encryption set, so a platform key encrypts them: set "
                                "disk_encryption_set_id to the stack's disk encryption set (fixed at creation)")
        elif sets and not _names_a_stack_des(stack, cluster, value, sets):
            yield cluster.urn, (f"disk_encryption_set_id is {value}, not the stack's disk encryption set "
                                f"({', '.join(des.name for des in sets)}): point it at the stack's set")


RULES: list[Rule] = [
    resource_rule(
        "azure-aks-secrets-kms",
        "AKS clusters encrypt Kubernetes secrets by KMS with a Key Vault key (security_profile.azure_key_vault_kms).",
        MANDATORY, "azure", [MANAGED_CLUSTER], check_kms_secrets,
    ),
    resource_rule(
        "azure-aks-api-server-private",
        "The AKS API server is private, or public only to authorized ranges no wider than a /24 (IPv4) together.",
        MANDATORY, "azure", [MANAGED_CLUSTER], check_api_server_private, checkov=("CKV_AZURE_6", "CKV_AZURE_115"),
    ),
    resource_rule(
        "azure-aks-local-accounts-off",
        "AKS clusters turn local accounts off and authorize with Entra ID RBAC (managed AAD, Azure RBAC).",
        MANDATORY, "azure", [MANAGED_CLUSTER], check_local_accounts_off, checkov=("CKV_AZURE_141",),
    ),
    stack_rule(
        "azure-aks-disk-encryption-set",
        "AKS node OS disks are encrypted on the stack's disk encryption set (the cluster's disk_encryption_set_id).",
        MANDATORY, "azure", [MANAGED_CLUSTER, DISK_ENCRYPTION_SET], check_cluster_des, checkov=("CKV_AZURE_117",),
    ),
    resource_rule(
        "azure-aks-no-node-public-ip",
        "No AKS agent pool gives its nodes public IPs (enable_node_public_ip).",
        MANDATORY, "azure", [MANAGED_CLUSTER, AGENT_POOL], check_no_node_public_ip,
    ),
    resource_rule(
        "azure-aks-encryption-at-host",
        "AKS agent pools encrypt at host (temp disks and disk caches).",
        ADVISORY, "azure", [MANAGED_CLUSTER, AGENT_POOL], check_encryption_at_host, checkov=("CKV_AZURE_227",),
    ),
]
