"""Azure AKS rules: each fails the bad input and passes the good one, offline through the project's policy runner
(camelCase inputs, as the engine hands pulumi-azure-native's containerservice inputs to the pack), and the pack over
a program that registers a ManagedCluster with the SDK blocks a public API server open to the world and a cluster
without the stack's disk encryption set."""

from __future__ import annotations

import copy
from typing import Any

import pulumi_azure_native as azure_native
import pytest
from stack_rule_args import messages, res, urn

from gpufleet.clouds.azure import mock_answers
from gpufleet.plan.engine import run_program
from gpufleet.plan.policy_runner import run_policies
from policies.azure.aks import RULES

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
DES_TYPE = "azure-native:compute:DiskEncryptionSet"
SUB = "/subscriptions/00000000-0000-4000-8000-000000000000/resourceGroups/rg/providers"
DES = f"{SUB}/Microsoft.Compute/diskEncryptionSets/des"
OTHER_DES = f"{SUB}/Microsoft.Compute/diskEncryptionSets/elsewhere"
KEY_ID = "https://kv.vault.azure.net/keys/k/0123456789abcdef0123456789abcdef"
GOOD_POOL = {"name": "system", "mode": "System", "vmSize": "Standard_D4s_v5", "enableNodePublicIP": False,
             "enableEncryptionAtHost": True}
_CLUSTER: dict[str, Any] = {
    "securityProfile": {"azureKeyVaultKms": {"enabled": True, "keyId": KEY_ID}},
    "apiServerAccessProfile": {"enablePrivateCluster": True},
    "disableLocalAccounts": True,
    "aadProfile": {"managed": True, "enableAzureRBAC": True},
    "diskEncryptionSetID": DES,
    "agentPoolProfiles": [GOOD_POOL],
}


def good_cluster(**change: Any) -> dict[str, Any]:
    inputs = copy.deepcopy(_CLUSTER)
    for key, value in change.items():
        if value is None:
            inputs.pop(key, None)
        else:
            inputs[key] = value
    return inputs


def cluster_messages(rule: str, **change: Any) -> list[str]:
    return [message for _, message in messages(rule, [res(CLUSTER, "aks", good_cluster(**change))])]


@pytest.mark.parametrize("rule", [rule.name for rule in RULES if rule.name != "azure-aks-disk-encryption-set"])
def test_a_well_built_cluster_passes(rule: str) -> None:
    assert cluster_messages(rule) == []


@pytest.mark.parametrize("profile", [None, {}, {"azureKeyVaultKms": {"enabled": False}},
                                     {"azureKeyVaultKms": {"enabled": True, "keyId": ""}}])
def test_secrets_without_kms_fail(profile: dict[str, Any] | None) -> None:
    (message,) = cluster_messages("azure-aks-secrets-kms", securityProfile=profile)
    assert "not encrypted by KMS" in message and "azure_key_vault_kms" in message


@pytest.mark.parametrize(("access", "words"), [
    (None, "no authorized IP ranges"),
    ({"enablePrivateCluster": False}, "no authorized IP ranges"),
    ({"authorizedIPRanges": ["0.0.0.0/0"]}, "0.0.0.0/0"),
    ({"authorizedIPRanges": ["198.51.100.0/22"]}, "more than a /24"),
    ({"authorizedIPRanges": ["not-a-range"]}, "does not parse"),
])
def test_a_public_api_server_open_too_wide_fails(access: dict[str, Any] | None, words: str) -> None:
    (message,) = cluster_messages("azure-aks-api-server-private", apiServerAccessProfile=access)
    assert "the API server is public" in message and words in message


@pytest.mark.parametrize("ranges", [["203.0.113.0/24"], ["203.0.113.0/25", "198.51.100.0/25"], ["10.0.0.0/8"]])
def test_a_public_api_server_for_named_ranges_passes(ranges: list[str]) -> None:
    assert cluster_messages("azure-aks-api-server-private",
                            apiServerAccessProfile={"authorizedIPRanges": ranges}) == []


@pytest.mark.parametrize(("change", "words"), [
    ({"disableLocalAccounts": None}, "local accounts are on"),
    ({"disableLocalAccounts": False}, "local accounts are on"),
    ({"aadProfile": None}, "Entra ID RBAC is off"),
    ({"aadProfile": {"managed": True, "enableAzureRBAC": False}}, "Entra ID RBAC is off"),
])
def test_local_accounts_or_no_entra_rbac_fail(change: dict[str, Any], words: str) -> None:
    (message,) = cluster_messages("azure-aks-local-accounts-off", **change)
    assert words in message


def test_a_cluster_without_a_disk_encryption_set_fails() -> None:
    found = messages("azure-aks-disk-encryption-set", [res(CLUSTER, "aks", good_cluster(diskEncryptionSetID=None))])
    assert found == [(urn(CLUSTER, "aks"), found[0][1])] and "no disk encryption set" in found[0][1]


def test_a_cluster_on_another_disk_encryption_set_fails() -> None:
    des = res(DES_TYPE, "des", {"id": DES, "encryptionType": "EncryptionAtRestWithCustomerKey"})
    found = messages("azure-aks-disk-encryption-set", [des, res(CLUSTER, "aks", good_cluster(
        diskEncryptionSetID=OTHER_DES))])
    assert len(found) == 1 and "not the stack's disk encryption set" in found[0][1]


def test_a_cluster_on_the_stacks_disk_encryption_set_passes() -> None:
    des = res(DES_TYPE, "des", {"encryptionType": "EncryptionAtRestWithCustomerKey"})
    cluster = res(CLUSTER, "aks", good_cluster(), property_dependencies={"diskEncryptionSetID": (des.urn,)})
    assert messages("azure-aks-disk-encryption-set", [des, cluster]) == []


@pytest.mark.parametrize("resource_type", [CLUSTER, POOL])
def test_public_node_ips_fail(resource_type: str) -> None:
    pool = {**GOOD_POOL, "enableNodePublicIP": True}
    inputs = good_cluster(agentPoolProfiles=[GOOD_POOL, pool]) if resource_type == CLUSTER else pool
    (found,) = messages("azure-aks-no-node-public-ip", [res(resource_type, "p", inputs)])
    assert "public IP" in found[1]
    if resource_type == CLUSTER:
        assert "agentPoolProfiles[1] (system)" in found[1]


@pytest.mark.parametrize("host", [None, False])
def test_pools_without_encryption_at_host_are_flagged(host: bool | None) -> None:
    pool = {k: v for k, v in GOOD_POOL.items() if k != "enableEncryptionAtHost"}
    if host is not None:
        pool["enableEncryptionAtHost"] = host
    (found,) = messages("azure-aks-encryption-at-host", [res(POOL, "gpu", pool)])
    assert "does not encrypt at host" in found[1]
    assert messages("azure-aks-encryption-at-host", [res(POOL, "gpu", GOOD_POOL)]) == []


def _program(authorized: list[str] | None, with_des: bool) -> None:
    des = azure_native.compute.DiskEncryptionSet(
        "des", resource_group_name="rg", encryption_type="EncryptionAtRestWithCustomerKey",
        active_key={"key_url": KEY_ID}, identity={"type": "SystemAssigned"})
    access = ({"enable_private_cluster": True} if authorized is None
              else {"enable_private_cluster": False, "authorized_ip_ranges": authorized})
    azure_native.containerservice.ManagedCluster(
        "aks", resource_group_name="rg", dns_prefix="train",
        security_profile={"azure_key_vault_kms": {"enabled": True, "key_id": KEY_ID}},
        api_server_access_profile=access, disable_local_accounts=True,
        aad_profile={"managed": True, "enable_azure_rbac": True},
        disk_encryption_set_id=des.id if with_des else None,
        agent_pool_profiles=[{"name": "system", "mode": "System", "vm_size": "Standard_D4s_v5", "count": 2,
                              "enable_node_public_ip": False, "enable_encryption_at_host": True}],
    )


@pytest.fixture(autouse=True)
def offline_managed_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline engine's answer for a ManagedCluster (its ARM id) where this cloud's mock answers lack one yet;
    the rules read only the inputs and the recorded dependency."""
    if CLUSTER not in mock_answers.ARM_PATHS and CLUSTER not in mock_answers.ANSWERS:
        monkeypatch.setitem(mock_answers.ARM_PATHS, CLUSTER,
                            ("Microsoft.ContainerService/managedClusters", "resourceName"))


def _violations(authorized: list[str] | None, with_des: bool) -> dict[str, str]:
    resources = run_program(lambda: _program(authorized, with_des), {}, project="gpufleet", stack="test",
                            region="eastus", zones=["1"])
    report = run_policies(resources, {}, [rule.policy for rule in RULES])
    assert report.has_mandatory == bool(report.violations)
    return {v.policy: v.message for v in report.violations}


def test_a_well_built_sdk_cluster_passes_every_aks_rule() -> None:
    assert _violations(None, with_des=True) == {}


def test_the_pack_blocks_a_world_open_api_server_and_a_cluster_without_the_stacks_des() -> None:
    found = _violations(["0.0.0.0/0"], with_des=False)
    assert sorted(found) == ["azure-aks-api-server-private", "azure-aks-disk-encryption-set"]
    assert "0.0.0.0/0" in found["azure-aks-api-server-private"]


ROLES = "/subscriptions/00000000-0000-4000-8000-000000000000/providers/Microsoft.Authorization/roleDefinitions"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
AKS_ID = f"{SUB}/Microsoft.ContainerService/managedClusters/train"
SUBNET = f"{SUB}/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
VAULT = f"{SUB}/Microsoft.KeyVault/vaults/kv"


def _assignment_messages(role: str, scope: str, with_cluster: bool = True) -> list[str]:
    assignment = res(ASSIGNMENT, "grant", {"principalId": "p", "roleDefinitionId": f"{ROLES}/{role}",
                                           "scope": scope})
    resources = [assignment, res(CLUSTER, "aks", good_cluster())] if with_cluster else [assignment]
    return [message for _, message in messages("azure-role-assignments-scoped", resources)]


@pytest.mark.parametrize(("role", "scope"), [
    ("12338af0-0e69-4776-bea7-d2b8c9d0c5fe", f"{VAULT}/keys/aks-kms"),
    ("f25e0fa2-a7c8-4377-a976-54943a77a395", VAULT),
    ("4d97b98b-1d4f-4787-a291-c67834d212e7", SUBNET),
    ("acdd72a7-3385-48ef-bd42-f606fba81ae7", DES),
    ("b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b", AKS_ID),
])
def test_the_roles_an_aks_cluster_needs_pass_on_their_own_resource_only(role: str, scope: str) -> None:
    assert _assignment_messages(role, scope) == []
    (wrong_place,) = _assignment_messages(role, f"{SUB}/Microsoft.Storage/storageAccounts/data")
    assert "not an allowed role" in wrong_place and "Azure Kubernetes Service RBAC Cluster Admin" in wrong_place
    (no_cluster,) = _assignment_messages(role, scope, with_cluster=False)
    assert "not an allowed role" in no_cluster


def test_network_contributor_on_the_whole_vnet_is_refused() -> None:
    (message,) = _assignment_messages("4d97b98b-1d4f-4787-a291-c67834d212e7",
                                      f"{SUB}/Microsoft.Network/virtualNetworks/vnet")
    assert "not an allowed role" in message
