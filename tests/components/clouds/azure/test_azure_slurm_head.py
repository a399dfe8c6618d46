"""The shipped ND H100 stack turned slurm on Azure, as the engine records it: the head node (private, on the stack's
image and disk encryption set, its own identity), its NIC's security group between it and the nodes, the roles on the
munge key's secret (made empty at deploy) and on the scale sets with the RBAC waits, the vault admitting the node
subnet, and the custom data of the head and of the nodes (gunzipped / base64-decoded as cloud-init reads it). No
resource holds the key."""

from __future__ import annotations

import base64
from pathlib import Path

import libyaml_files
import pytest
from conftest import of_type, one, write_stack
from slurm_stacks import cloud_config, files_of, named, slurm_cluster

from components.bootstrap.cloud_init import node_script
from components.clouds.azure.slurm_identity import (
    FLEXIBLE_VM_ACTIONS,
    HEAD_SECRET_DATA_ACTIONS,
    KEY_VAULT_SECRETS_USER,
    MUNGE_CONTENT_TYPE,
    MUNGE_SECRET_NAME,
    SCALE_SET_ACTIONS,
)
from components.clouds.azure.storage import RBAC_PROPAGATION
from gpufleet.clouds.azure.mock_answers import STAND_IN_PRIVATE_ADDRESS
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.record import RecordedResource

VM = "azure-native:compute:VirtualMachine"
NIC = "azure-native:network:NetworkInterface"
NSG = "azure-native:network:NetworkSecurityGroup"
ASG = "azure-native:network:ApplicationSecurityGroup"
ROLE = "azure-native:authorization:RoleAssignment"
ROLE_DEF = "azure-native:authorization:RoleDefinition"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
VMSS = "azure-native:compute:VirtualMachineScaleSet"
SLEEP = "time:index/sleep:Sleep"
SECRET = "azure-native:keyvault:Secret"
HEAD = "train-dev-slurm-head"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    cluster = slurm_cluster("azure-train-ndh100")
    cluster["network"]["admin_cidrs"] = ["198.51.100.0/24"]
    return plan_stack(write_stack(tmp_path_factory.mktemp("stacks"), "slurm-ndh100", cluster))


def test_the_head_node_is_a_private_vm_on_the_stacks_image_and_disk_encryption_set(plan: PlanResult) -> None:
    head, des, vmss = one(plan, VM), one(plan, "azure-native:compute:DiskEncryptionSet"), one(plan, VMSS)
    inputs = head.inputs
    assert inputs["hardwareProfile"] == {"vmSize": "Standard_D4ds_v5"}
    assert inputs["zones"] == ["1"]
    storage, nodes_storage = inputs["storageProfile"], vmss.inputs["virtualMachineProfile"]["storageProfile"]
    assert storage.get("imageReference") == nodes_storage.get("imageReference")
    assert storage["osDisk"]["managedDisk"]["diskEncryptionSet"] == nodes_storage["osDisk"]["managedDisk"][
        "diskEncryptionSet"]
    assert des.urn in head.property_dependencies["storageProfile"]
    assert storage["osDisk"]["diskSizeGB"] == 100
    assert inputs["securityProfile"] == {"encryptionAtHost": True}
    assert inputs["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] is True
    identity = named(plan, IDENTITY, f"{HEAD}-id")
    assert inputs["identity"]["type"] == "UserAssigned"
    assert len(inputs["identity"]["userAssignedIdentities"]) == 1
    assert head.property_dependencies["identity"] == (identity.urn,)
    # No public address: one IP configuration in the node subnet, no publicIPAddress, no PublicIPAddress resource.
    nic = one(plan, NIC)
    assert head.property_dependencies["networkProfile"] == (nic.urn,)
    (config,) = nic.inputs["ipConfigurations"]
    assert "publicIPAddress" not in config
    assert config["subnet"]["id"] == vmss.inputs["virtualMachineProfile"]["networkProfile"][
        "networkInterfaceConfigurations"][0]["ipConfigurations"][0]["subnet"]["id"]
    assert [r.name for r in of_type(plan, "azure-native:network:PublicIPAddress")] == ["train-net-nat"]


def test_the_heads_security_group_admits_slurm_from_the_nodes_only(plan: PlanResult) -> None:
    nsg, asg, nic, vmss = named(plan, NSG, HEAD), one(plan, ASG), one(plan, NIC), one(plan, VMSS)
    assert nsg.urn in nic.property_dependencies["networkSecurityGroup"]
    assert nsg.property_dependencies["securityRules"] == (asg.urn,)
    rules = {rule["name"]: rule for rule in nsg.inputs["securityRules"]}
    assert set(rules) == {"slurmctld-from-nodes", "srun-from-nodes", "slurmd-to-nodes", "ssh-from-vnet",
                          "ssh-admin-0", "deny-other-inbound"}
    assert (rules["ssh-from-vnet"]["destinationPortRange"], rules["ssh-from-vnet"]["sourceAddressPrefix"]) == (
        "22", "VirtualNetwork")
    nodes = rules["slurmctld-from-nodes"]["sourceApplicationSecurityGroups"]
    assert len(nodes) == 1
    assert (rules["slurmctld-from-nodes"]["direction"], rules["slurmctld-from-nodes"]["destinationPortRange"]) == (
        "Inbound", "6817")
    assert (rules["srun-from-nodes"]["direction"], rules["srun-from-nodes"]["destinationPortRange"],
            rules["srun-from-nodes"]["sourceApplicationSecurityGroups"]) == ("Inbound", "60001-63000", nodes)
    assert (rules["slurmd-to-nodes"]["direction"], rules["slurmd-to-nodes"]["destinationPortRange"],
            rules["slurmd-to-nodes"]["destinationApplicationSecurityGroups"]) == ("Outbound", "6818", nodes)
    assert rules["ssh-admin-0"]["sourceAddressPrefix"] == "198.51.100.0/24"
    deny = rules["deny-other-inbound"]
    assert (deny["access"], deny["direction"], deny["sourceAddressPrefix"], deny["priority"]) == (
        "Deny", "Inbound", "*", 4096)
    assert all(rule["access"] == "Allow" and rule["priority"] < deny["priority"]
               for name, rule in rules.items() if name != "deny-other-inbound")
    # Every scale set's VMs are in the nodes' application security group.
    assert asg.urn in vmss.property_dependencies["virtualMachineProfile"]
    ip = vmss.inputs["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0][
        "ipConfigurations"][0]
    assert ip["applicationSecurityGroups"] == nodes


def _wait_before(plan: PlanResult, assignment: RecordedResource, dependent: RecordedResource) -> None:
    """The dependent create depends on a wait of RBAC_PROPAGATION that depends on the assignment."""
    waits = [s for s in of_type(plan, SLEEP) if s.urn in dependent.depends_on and assignment.urn in s.depends_on]
    assert len(waits) == 1 and waits[0].inputs["createDuration"] == RBAC_PROPAGATION


def test_the_munge_key_roles_sit_on_the_secret_and_the_head_waits_for_them(plan: PlanResult) -> None:
    vault = one(plan, "azure-native:keyvault:Vault")
    head_identity, nodes_identity = named(plan, IDENTITY, f"{HEAD}-id"), named(plan, IDENTITY, "train-node-id")
    head_role = named(plan, ROLE_DEF, f"{HEAD}-munge-key-role")
    assert head_role.inputs["permissions"] == [{"dataActions": list(HEAD_SECRET_DATA_ACTIONS)}]
    head_grant, nodes_grant = named(plan, ROLE, f"{HEAD}-munge-key"), named(plan, ROLE, f"{HEAD}-munge-key-read")
    # The secret exists before its roles are assigned: made empty at deploy, in the stack's vault.
    secret = named(plan, SECRET, f"{HEAD}-munge-key")
    assert secret.inputs["secretName"] == MUNGE_SECRET_NAME
    assert secret.inputs["properties"] == {"value": "", "contentType": MUNGE_CONTENT_TYPE}
    assert secret.property_dependencies["vaultName"] == (vault.urn,)
    # A later update would PUT the empty value over the key the head node set.
    assert set(secret.ignore_changes) == {"properties", "tags"}
    for grant, identity in ((head_grant, head_identity), (nodes_grant, nodes_identity)):
        assert grant.property_dependencies["scope"] == (secret.urn,)
        assert grant.property_dependencies["principalId"] == (identity.urn,)
    assert head_grant.property_dependencies["roleDefinitionId"] == (head_role.urn,)
    assert nodes_grant.inputs["roleDefinitionId"].endswith(f"/roleDefinitions/{KEY_VAULT_SECRETS_USER}")
    head = one(plan, VM)
    _wait_before(plan, head_grant, head)
    _wait_before(plan, nodes_grant, head)
    (role_wait,) = [s for s in of_type(plan, SLEEP) if s.urn in head_grant.depends_on]
    assert head_role.urn in role_wait.depends_on  # the custom role replicated before its assignment
    # The key is nowhere in Pulumi's hands: the one secret resource is the empty one.
    assert [r.urn for r in of_type(plan, SECRET)] == [secret.urn]


def test_the_head_may_resize_the_clusters_scale_sets_only(plan: PlanResult) -> None:
    role = named(plan, ROLE_DEF, f"{HEAD}-scaling-role")
    group = one(plan, "azure-native:resources:ResourceGroup")
    assert role.inputs["permissions"] == [{"actions": list(SCALE_SET_ACTIONS)}]
    assert role.property_dependencies["assignableScopes"] == (group.urn,)
    _head_holds(plan, f"{HEAD}-scaling-h100", role, one(plan, VMSS))


def _head_holds(plan: PlanResult, name: str, role: RecordedResource, scope: RecordedResource) -> None:
    """The assignment `name` gives the head node's identity `role` on `scope`, once the role has replicated."""
    grant = named(plan, ROLE, name)
    assert grant.property_dependencies["scope"] == (scope.urn,)
    assert grant.property_dependencies["roleDefinitionId"] == (role.urn,)
    assert grant.property_dependencies["principalId"] == (named(plan, IDENTITY, f"{HEAD}-id").urn,)
    (role_wait,) = [s for s in of_type(plan, SLEEP) if s.urn in grant.depends_on]
    assert role.urn in role_wait.depends_on


def test_a_flexible_group_gives_the_head_its_vms_on_the_resource_group(plan: PlanResult, tmp_path: Path) -> None:
    # The InfiniBand group is a Uniform scale set: the scale set's actions are all it needs.
    assert not [r for r in of_type(plan, ROLE_DEF) if r.name == f"{HEAD}-flexible-vms-role"]
    cluster = slurm_cluster("azure-train-ndh100")
    cluster["node_groups"][0]["rdma"] = "off"  # a Flexible scale set, whose VMs are the resource group's own
    flexible = plan_stack(write_stack(tmp_path, "slurm-flexible", cluster))
    assert one(flexible, VMSS).inputs["orchestrationMode"] == "Flexible"
    role = named(flexible, ROLE_DEF, f"{HEAD}-flexible-vms-role")
    assert role.inputs["permissions"] == [{"actions": list(FLEXIBLE_VM_ACTIONS)}]
    _head_holds(flexible, f"{HEAD}-flexible-vms", role, one(flexible, "azure-native:resources:ResourceGroup"))


def test_the_vault_admits_the_node_subnet_through_its_service_endpoint(plan: PlanResult) -> None:
    subnet = named(plan, "azure-native:network:Subnet", "train-net-nodes")
    assert subnet.inputs["serviceEndpoints"] == [{"service": "Microsoft.KeyVault"}]
    vault = one(plan, "azure-native:keyvault:Vault")
    acls = vault.inputs["properties"]["networkAcls"]
    assert acls["defaultAction"] == "Deny"
    assert len(acls["virtualNetworkRules"]) == 1
    assert subnet.urn in vault.property_dependencies["properties"]


def test_the_heads_custom_data_carries_azures_script_part_and_its_vault(plan: PlanResult) -> None:
    head, vault = one(plan, VM), one(plan, "azure-native:keyvault:Vault")
    files = files_of(cloud_config(head.inputs["osProfile"]["customData"]))
    assert files["/usr/local/lib/gpufleet/slurm-cloud.sh"] == node_script("slurm-azure.sh")
    settings = files["/etc/gpufleet/bootstrap.env"].splitlines()
    assert f"GPUFLEET_KEY_VAULT={vault.inputs['vaultName']}" in settings
    assert f"GPUFLEET_MUNGE_SECRET={MUNGE_SECRET_NAME}" in settings
    assert "/etc/munge/munge.key" not in files


def test_the_nodes_join_the_head_after_their_check(plan: PlanResult) -> None:
    vmss, vault = one(plan, VMSS), one(plan, "azure-native:keyvault:Vault")
    text = base64.b64decode(vmss.inputs["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    document = libyaml_files.load(text)
    files = files_of(document)
    assert files["/usr/local/lib/gpufleet/slurm-cloud.sh"] == node_script("slurm-azure.sh")
    settings = files["/etc/gpufleet/slurm.env"].splitlines()
    assert f"GPUFLEET_SLURM_SERVER={STAND_IN_PRIVATE_ADDRESS}:6817" in settings
    assert f"GPUFLEET_KEY_VAULT={vault.inputs['vaultName']}" in settings
    assert "GPUFLEET_SCALE_SET_MODE=Uniform" in settings  # an InfiniBand group's scale set
    registration = files["/etc/gpufleet/slurmd-registration"]
    assert registration.startswith("Standard_ND96isr_H100_v5 1 /usr/sbin/slurmd --systemd -Z -N h100-@INSTANCE_ID@")
    assert "gpufleet-slurm-join.service" in next(line for line in document["runcmd"]
                                                 if line[:2] == ["systemctl", "enable"])
    assert "Requires=gpufleet-health.service" in files["/etc/systemd/system/gpufleet-slurm-join.service"]


def test_the_plan_says_what_nobody_has_confirmed(plan: PlanResult) -> None:
    warnings = plan.summary["warnings"]
    assert any("the munge key's secret is created empty through ARM" in w for w in warnings)
    assert any("scaling role" in w for w in warnings)


def test_the_pack_passes_the_head_node_its_roles_and_its_munge_key(plan: PlanResult) -> None:
    judged = {"azure-slurm-munge-key-in-vault", "azure-slurmctld-not-public", "azure-role-assignments-scoped",
              "azure-no-public-ip"}
    assert [v for v in plan.policies["violations"] if v["policy"] in judged] == []


def test_a_brought_subnet_is_told_it_needs_key_vaults_service_endpoint(tmp_path: Path) -> None:
    vnet = "/subscriptions/11111111-1111-4111-8111-111111111111/resourceGroups/net/providers/Microsoft.Network/" \
           "virtualNetworks/v"
    cluster = slurm_cluster("azure-train-ndh100")
    cluster["network"] = {**cluster["network"], "cidr": None, "vnet_id": vnet, "subnet_id": f"{vnet}/subnets/nodes"}
    cluster["storage"] = {**cluster["storage"], "shared": None}
    plan = plan_stack(write_stack(tmp_path, "slurm-brought", cluster))
    assert any(w.startswith("network.subnet_id: the brought node subnet must have Key Vault's service endpoint")
               for w in plan.summary["warnings"])
    acls = one(plan, "azure-native:keyvault:Vault").inputs["properties"]["networkAcls"]
    assert acls["virtualNetworkRules"] == [{"id": f"{vnet}/subnets/nodes"}]
