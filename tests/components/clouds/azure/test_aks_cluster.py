"""The AKS cluster a `scheduler: kubernetes` Azure stack registers: a user-assigned identity with its roles waited for,
the cluster on the stack's disk encryption set with KMS on a key of the stack's vault, a private API server in its own
delegated subnet (or ranged public), local accounts off with Entra RBAC, workload identity, a tainted system pool, and
the admins' role on the cluster.

Until the scheduler checks let Azure through (and list AKS versions and driver-only images), the fixtures drop those
three checks from the registry for the test only (`aks_checks_bypassed`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import of_type, one, read_cluster, without_job_operators, write_stack

from gpufleet.clouds.azure import mock_answers
from gpufleet.plan.planner import PlanResult, plan_stack

CLUSTER = "azure-native:containerservice:ManagedCluster"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
SLEEP = "time:index/sleep:Sleep"
ADMIN = "44444444-4444-4444-8444-444444444444"
VERSION = "1.36"
# The checks that refuse Azure Kubernetes until the stack-file side lets it through (another part of this work).
ROLES = {  # built-in-roles page ids
    "kms-key": "12338af0-0e69-4776-bea7-d2b8c9d0c5fe",  # Key Vault Crypto User
    "kms-vault": "f25e0fa2-a7c8-4377-a976-54943a77a395",  # Key Vault Contributor
    "des": "acdd72a7-3385-48ef-bd42-f606fba81ae7",  # Reader
    "node-subnet": "4d97b98b-1d4f-4787-a291-c67834d212e7",  # Network Contributor
    "apiserver-subnet": "4d97b98b-1d4f-4787-a291-c67834d212e7",
}
RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"


def aks_cluster(stack: str = "azure-train-ndh100", **scheduler: Any) -> dict[str, Any]:
    """A shipped Azure VM stack turned Kubernetes, less what AKS does not build (the Lustre file system, the local
    NVMe RAID, idle scale-in: the stack checks refuse them there) and the job operators (this is the control plane)."""
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": VERSION, "admins": [ADMIN], **scheduler}
    cluster["storage"].pop("shared", None)
    cluster["storage"]["scratch"] = "none"
    for group in cluster["node_groups"]:
        group.pop("idle", None)
    return without_job_operators(cluster)


def plan_of(directory: Path, cluster: dict[str, Any]) -> PlanResult:
    return plan_stack(write_stack(directory, "aks", cluster))


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    return plan_of(tmp_path_factory.mktemp("aks"), aks_cluster())


def named(plan: PlanResult, typ: str, name: str) -> Any:
    (found,) = [r for r in plan.resources if r.type == typ and r.name == name]
    return found


def role_id(role: str) -> str:
    return f"/subscriptions/{mock_answers.SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def test_the_cluster_runs_as_its_own_user_assigned_identity(plan: PlanResult) -> None:
    cluster = one(plan, CLUSTER)
    identity = named(plan, "azure-native:managedidentity:UserAssignedIdentity", "train-aks")
    assert cluster.inputs["identity"]["type"] == "UserAssigned"
    assert cluster.property_dependencies["identity"] == (identity.urn,)
    assert cluster.inputs["kubernetesVersion"] == VERSION


def test_the_identity_holds_each_role_aks_needs_on_its_scope_and_the_cluster_waits_for_them(plan: PlanResult) -> None:
    identity = named(plan, "azure-native:managedidentity:UserAssignedIdentity", "train-aks")
    scopes = {
        "kms-key": named(plan, "azure-native:keyvault:Key", "train-kms").urn,
        "kms-vault": named(plan, "azure-native:keyvault:Vault", "train-disk-kv").urn,
        "des": one(plan, "azure-native:compute:DiskEncryptionSet").urn,
        "node-subnet": named(plan, "azure-native:network:Subnet", "train-net-nodes").urn,
        "apiserver-subnet": named(plan, "azure-native:network:Subnet", "train-apiserver").urn,
    }
    wait = named(plan, SLEEP, "train-aks-roles-propagated")
    for label, role in ROLES.items():
        assignment = named(plan, ASSIGNMENT, f"train-aks-{label}")
        assert assignment.inputs["roleDefinitionId"] == role_id(role), label
        assert assignment.property_dependencies["scope"] == (scopes[label],), label
        assert assignment.property_dependencies["principalId"] == (identity.urn,), label
        assert assignment.urn in wait.depends_on
    assert wait.inputs["createDuration"] == "10m"
    assert wait.urn in one(plan, CLUSTER).depends_on


def test_node_disks_use_the_stack_disk_encryption_set_and_secrets_a_kms_key_of_its_vault(plan: PlanResult) -> None:
    cluster, key = one(plan, CLUSTER), named(plan, "azure-native:keyvault:Key", "train-kms")
    assert cluster.property_dependencies["diskEncryptionSetID"] == (
        one(plan, "azure-native:compute:DiskEncryptionSet").urn,)
    kms = cluster.inputs["securityProfile"]["azureKeyVaultKms"]
    assert kms["enabled"] is True and kms["keyVaultNetworkAccess"] == "Private"
    assert key.urn in cluster.property_dependencies["securityProfile"]
    assert named(plan, "azure-native:keyvault:Vault", "train-disk-kv").urn in cluster.property_dependencies[
        "securityProfile"]
    # The KMS plugin encrypts and decrypts; the disk key wraps only.
    assert key.inputs["properties"]["keyOps"] == ["encrypt", "decrypt"]
    assert key.property_dependencies["vaultName"] == (named(plan, "azure-native:keyvault:Vault", "train-disk-kv").urn,)


def test_the_api_server_is_private_in_its_own_delegated_subnet(plan: PlanResult) -> None:
    cluster, subnet = one(plan, CLUSTER), named(plan, "azure-native:network:Subnet", "train-apiserver")
    access = cluster.inputs["apiServerAccessProfile"]
    assert access["enablePrivateCluster"] is True and access["enableVnetIntegration"] is True
    assert "authorizedIPRanges" not in access
    assert cluster.property_dependencies["apiServerAccessProfile"] == (subnet.urn,)
    assert subnet.inputs["delegations"] == [
        {"name": "aks-apiserver", "serviceName": "Microsoft.ContainerService/managedClusters"}]
    assert subnet.inputs["addressPrefix"] == "10.42.255.240/28"  # the VNet's last /28, outside the node half


def test_a_public_endpoint_answers_only_the_stack_ranges(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, aks_cluster(endpoint="public", public_cidrs=["203.0.113.0/24"]))
    access = one(plan, CLUSTER).inputs["apiServerAccessProfile"]
    assert access["enablePrivateCluster"] is False
    assert access["authorizedIPRanges"] == ["203.0.113.0/24"]


def test_local_accounts_are_off_and_entra_rbac_and_workload_identity_on(plan: PlanResult) -> None:
    inputs = one(plan, CLUSTER).inputs
    assert inputs["disableLocalAccounts"] is True and inputs["enableRBAC"] is True
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["securityProfile"]["workloadIdentity"] == {"enabled": True}
    assert inputs["networkProfile"]["networkPlugin"] == "azure"
    assert inputs["sku"] == {"name": "Base", "tier": "Standard"}  # 16 GPU nodes at most: past the Free tier's 10


def test_a_small_dev_cluster_takes_the_free_tier(tmp_path: Path) -> None:
    cluster = aks_cluster()
    cluster["node_groups"][0]["size"] = {"min": 0, "desired": 1, "max": 6}  # 9 with the system pool's 3 at most
    cluster["budget"]["max_hourly_usd"] = 1600
    assert one(plan_of(tmp_path, cluster), CLUSTER).inputs["sku"] == {"name": "Base", "tier": "Free"}


def test_the_system_pool_is_the_untainted_system_group(plan: PlanResult) -> None:
    # Issue 39: nothing but CriticalAddonsOnly pods could run on a tainted system pool, so launchers and operators
    # stayed Pending; the system group is an untainted autoscaled pool of the catalog's default system type.
    cluster = one(plan, CLUSTER)
    (system,) = cluster.inputs["agentPoolProfiles"]
    assert system["mode"] == "System" and "nodeTaints" not in system
    assert (system["vmSize"], system["count"], system["minCount"], system["maxCount"]) == ("Standard_D4s_v5", 2, 2, 3)
    assert system["enableAutoScaling"] is True and system["nodeLabels"] == {"gpufleet.io/role": "system"}
    assert system["enableNodePublicIP"] is False and system["enableEncryptionAtHost"] is True
    assert named(plan, "azure-native:network:Subnet", "train-net-nodes").urn in cluster.property_dependencies[
        "agentPoolProfiles"]


def test_the_deployer_and_each_admin_are_cluster_admins_through_azure_rbac(plan: PlanResult) -> None:
    cluster = one(plan, CLUSTER)
    client = mock_answers.invoke("azure-native:authorization:getClientConfig", "eastus", [])
    assert client is not None
    admins = [named(plan, ASSIGNMENT, f"train-aks-admin-{i}") for i in range(2)]
    assert [a.inputs["principalId"] for a in admins] == [client["objectId"], ADMIN]
    for admin in admins:
        assert admin.inputs["roleDefinitionId"] == role_id(RBAC_CLUSTER_ADMIN)
        assert admin.property_dependencies["scope"] == (cluster.urn,)
        assert admin.urn in named(plan, SLEEP, "train-aks-admins-propagated").depends_on


def test_a_vm_stack_registers_no_aks(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, copy.deepcopy(read_cluster("azure-infer-a100")))
    assert not [r for r in plan.resources if r.type.startswith("azure-native:containerservice:")]
    assert of_type(plan, "azure-native:compute:VirtualMachineScaleSet")


def test_a_brought_network_is_refused_naming_the_field(tmp_path: Path) -> None:
    cluster = aks_cluster()
    network = cluster["network"]
    network.pop("cidr")
    group = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks"
    network.update(vnet_id=f"{group}/v", subnet_id=f"{group}/v/subnets/nodes")
    with pytest.raises(Exception, match=r"network\.subnet_id: AKS reaches the stack's private Key Vault"):
        plan_of(tmp_path, cluster)


def test_shared_storage_is_refused_naming_the_field(tmp_path: Path) -> None:
    cluster = aks_cluster()
    cluster["storage"]["shared"] = copy.deepcopy(read_cluster("azure-train-ndh100")["storage"]["shared"])
    with pytest.raises(Exception, match=r"storage\.shared: AKS nodes do not mount"):
        plan_of(tmp_path, cluster)


def test_the_autoscaler_profile_scales_gpu_pools_in_after_ten_minutes_by_default(plan: PlanResult) -> None:
    assert one(plan, CLUSTER).inputs["autoScalerProfile"] == {
        "scaleDownUnneededTime": "10m", "skipNodesWithLocalStorage": "false", "expander": "least-waste"}
    assert "warnings" not in plan.summary


def test_idle_minutes_become_the_scale_down_unneeded_time_and_the_threshold_a_warning(tmp_path: Path) -> None:
    cluster = aks_cluster()
    cluster["node_groups"][0]["idle"] = {"gpu_util_below": 5, "for_minutes": 45}
    plan = plan_of(tmp_path, cluster)
    assert one(plan, CLUSTER).inputs["autoScalerProfile"]["scaleDownUnneededTime"] == "45m"
    (warning,) = plan.summary["warnings"]
    assert warning.startswith("node_groups[0].idle.gpu_util_below: not applied on AKS")


def test_the_budget_notifies_the_action_group_at_each_percent(plan: PlanResult) -> None:
    budget = one(plan, "azure-native:consumption:Budget")
    group = one(plan, "azure-native:monitor:ActionGroup")
    assert sorted(budget.inputs["notifications"]) == [
        "actual-over-100-percent", "actual-over-50-percent", "actual-over-80-percent"]
    assert budget.property_dependencies["notifications"] == (group.urn,)
    assert budget.property_dependencies["scope"] == (one(plan, "azure-native:resources:ResourceGroup").urn,)
    assert budget.inputs["amount"] == round(1600 * 730, 2)
