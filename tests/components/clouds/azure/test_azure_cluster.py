"""The Azure cluster as the engine records it: scale sets, disk encryption, network,
autoscale, spot, and the stack errors that stop a plan before any resource."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from azure_plans import (
    AUTOSCALE,
    DES,
    INFER,
    NSG,
    ROLE,
    TRAIN,
    VMSS,
    cloud_init,
    node_file,
    one,
    plan_cli,
    plan_variant,
    shipped,
    variant,
)
from conftest import of_type
from typer.testing import CliRunner

from gpufleet.cli import app

CRYPTO_SERVICE_ENCRYPTION_USER = "e147488a-f6f5-4113-8e2d-b22465e65bf6"


def test_train_stack_plans_clean_through_the_cli() -> None:
    result = CliRunner().invoke(app, ["plan", "--stack", TRAIN, "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["cloud"] == "azure" and document["policies"]["violations"] == []
    assert document["summary"]["node_groups"][0]["fabric"] == "infiniband"


def test_one_uniform_scale_set_per_ib_group_in_one_placement_group() -> None:
    scale_set = one(shipped(TRAIN), VMSS)
    inputs = scale_set.inputs
    assert inputs["orchestrationMode"] == "Uniform"
    assert inputs["singlePlacementGroup"] is True and inputs["overprovision"] is False
    assert inputs["upgradePolicy"] == {"mode": "Manual"}  # a model change never reimages a training node
    assert inputs["sku"]["name"] == "Standard_ND96isr_H100_v5"
    assert inputs["vmScaleSetName"] == "gpufleet-train-dev-h100"
    assert scale_set.parent is not None and scale_set.parent.endswith("gpufleet:azure:NodeGroup::train-h100")


def test_every_disk_uses_the_disk_encryption_set() -> None:
    plan = shipped(TRAIN)
    des = one(plan, DES)
    assert des.inputs["encryptionType"] == "EncryptionAtRestWithCustomerKey"
    assert des.inputs["rotationToLatestKeyVersionEnabled"] is True
    key = one(plan, "azure-native:keyvault:Key")
    assert key.urn in des.property_dependencies["activeKey"]
    for scale_set in of_type(plan, VMSS):
        storage = scale_set.inputs["virtualMachineProfile"]["storageProfile"]
        disks = [storage["osDisk"], *storage.get("dataDisks", [])]
        assert all("diskEncryptionSet" in disk["managedDisk"] for disk in disks)
        assert "diffDiskSettings" not in storage["osDisk"]  # no ephemeral OS disk under a customer key
        assert des.urn in scale_set.property_dependencies["virtualMachineProfile"]
        assert scale_set.inputs["virtualMachineProfile"]["securityProfile"]["encryptionAtHost"] is True


def test_the_des_identity_holds_one_role_on_the_key_only() -> None:
    plan = shipped(TRAIN)
    des, key = one(plan, DES), one(plan, "azure-native:keyvault:Key")
    assert des.inputs["identity"] == {"type": "SystemAssigned"}
    held = [r for r in of_type(plan, ROLE) if des.urn in r.property_dependencies.get("principalId", ())]
    assert len(held) == 1
    (assignment,) = held
    assert assignment.inputs["roleDefinitionId"].endswith(f"/roleDefinitions/{CRYPTO_SERVICE_ENCRYPTION_USER}")
    assert assignment.property_dependencies["scope"] == (key.urn,)
    assert "/keys/" in assignment.inputs["scope"]
    # Disks are created only once the DES can reach the key (after the role's propagation wait:
    # tests/components/clouds/azure/test_azure_rbac_propagation.py).


def test_vault_is_recoverable_rbac_only_and_closed_and_the_key_rotates() -> None:
    plan = shipped(TRAIN)
    vault = one(plan, "azure-native:keyvault:Vault").inputs["properties"]
    assert vault["enableSoftDelete"] is True and vault["enablePurgeProtection"] is True
    assert vault["enableRbacAuthorization"] is True
    assert vault["networkAcls"] == {"bypass": "AzureServices", "defaultAction": "Deny"}
    key = one(plan, "azure-native:keyvault:Key").inputs["properties"]
    assert key["kty"] == "RSA" and key["keySize"] >= 2048
    actions = key["rotationPolicy"]["lifetimeActions"]
    assert [a["action"]["type"] for a in actions] == ["rotate"]


def test_prod_protects_vault_key_and_des(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, variant(environment="prod"))
    for typ in ("azure-native:keyvault:Vault", "azure-native:keyvault:Key", DES):
        assert one(plan, typ).protect is True
    assert one(shipped(TRAIN), DES).protect is False


def test_nsg_admits_nothing_from_the_internet_and_ssh_only_from_admin_cidrs(tmp_path: Path) -> None:
    def inbound_allowed(plan: object) -> list[dict]:
        rules = one(plan, NSG).inputs["securityRules"]
        return [r for r in rules if r["direction"] == "Inbound" and r["access"] == "Allow"]

    assert inbound_allowed(shipped(TRAIN)) == []
    denies = [r for r in one(shipped(TRAIN), NSG).inputs["securityRules"] if r["access"] == "Deny"]
    assert [r["sourceAddressPrefix"] for r in denies] == ["Internet"]
    admin = plan_variant(tmp_path, variant(network={"admin_cidrs": ["203.0.113.0/24"]}))
    (ssh,) = inbound_allowed(admin)
    assert (ssh["sourceAddressPrefix"], ssh["destinationPortRange"], ssh["protocol"]) == ("203.0.113.0/24", "22", "Tcp")


def test_no_public_ip_on_nodes_and_egress_through_nat() -> None:
    plan = shipped(TRAIN)
    for scale_set in of_type(plan, VMSS):
        for nic in scale_set.inputs["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]:
            assert nic["enableAcceleratedNetworking"] is True
            assert all("publicIPAddressConfiguration" not in ip for ip in nic["ipConfigurations"])
    (public_ip,) = of_type(plan, "azure-native:network:PublicIPAddress")
    nat = one(plan, "azure-native:network:NatGateway")
    assert public_ip.inputs["publicIPAllocationMethod"] == "Static" and public_ip.inputs["sku"]["name"] == "Standard"
    assert nat.property_dependencies["publicIpAddresses"] == (public_ip.urn,)
    subnet = one(plan, "azure-native:network:Subnet")
    assert subnet.inputs["defaultOutboundAccess"] is False
    assert subnet.property_dependencies["natGateway"] == (nat.urn,)
    assert subnet.property_dependencies["networkSecurityGroup"] == (one(plan, NSG).urn,)


def test_autoscale_setting_owns_the_stacks_sizes() -> None:
    plan = shipped(TRAIN)
    scale_set, autoscale = one(plan, VMSS), one(plan, AUTOSCALE)
    (profile,) = autoscale.inputs["profiles"]
    assert profile["capacity"] == {"minimum": "0", "default": "2", "maximum": "16"}
    assert autoscale.property_dependencies["targetResourceUri"] == (scale_set.urn,)
    assert scale_set.inputs["sku"]["capacity"] == 2
    assert scale_set.ignore_changes == ("sku.capacity",)


def test_regular_vms_get_a_terminate_notice_from_the_checkpoint_grace(tmp_path: Path) -> None:
    profile = one(shipped(TRAIN), VMSS).inputs["virtualMachineProfile"]
    assert profile["priority"] == "Regular"
    notice = profile["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert notice == {"enable": True, "notBeforeTimeout": "PT5M"}
    long = plan_variant(tmp_path, variant(bootstrap={"checkpoint_grace_seconds": 3600}))
    scale_set = one(long, VMSS)
    long_notice = scale_set.inputs["virtualMachineProfile"]["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert long_notice["notBeforeTimeout"] == "PT15M"  # Azure's most
    env = node_file(scale_set, "/etc/gpufleet/bootstrap.env")
    assert "GPUFLEET_CHECKPOINT_GRACE_SECONDS=900" in env


def test_spot_variant_evicts_with_delete_and_watches_preempt(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, variant(group={"capacity": "spot"}))
    scale_set = one(plan, VMSS)
    profile = scale_set.inputs["virtualMachineProfile"]
    assert (profile["priority"], profile["evictionPolicy"], profile["billingProfile"]["maxPrice"]) == (
        "Spot", "Delete", -1)
    assert "scheduledEventsProfile" not in profile  # Azure allows no terminate notification on Spot
    assert scale_set.inputs["platformFaultDomainCount"] == 1
    document = cloud_init(scale_set)
    assert "gpufleet-spot-watcher.service" in document["runcmd"][1]
    watcher = node_file(scale_set, "/usr/local/sbin/gpufleet-spot-watcher")
    assert "Preempt" in watcher and "metadata/scheduledevents" in watcher
    assert "GPUFLEET_CLOUD=azure" in node_file(scale_set, "/etc/gpufleet/bootstrap.env")


def test_spot_cap_is_the_stacks_price(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, variant(group={"capacity": "spot", "spot_max_price": 50.0}))
    assert one(plan, VMSS).inputs["virtualMachineProfile"]["billingProfile"]["maxPrice"] == 50


def test_inference_group_is_flexible_spot_without_a_priority_mix() -> None:
    scale_set = one(shipped(INFER), VMSS)
    inputs = scale_set.inputs
    assert inputs["orchestrationMode"] == "Flexible"
    assert "singlePlacementGroup" not in inputs and "overprovision" not in inputs
    assert "priorityMixPolicy" not in inputs  # a Regular base is a node group of its own
    assert inputs["platformFaultDomainCount"] == 1
    assert inputs["zones"] == ["1"]  # the created NAT gateway is zonal (rules.nat_egress_zone)
    profile = inputs["virtualMachineProfile"]
    assert profile["networkProfile"]["networkApiVersion"] == "2020-11-01"
    assert (profile["priority"], profile["evictionPolicy"]) == ("Spot", "Delete")


def test_health_gate_probes_the_node_check_endpoint_and_repairs() -> None:
    scale_set = one(shipped(TRAIN), VMSS)
    (extension,) = scale_set.inputs["virtualMachineProfile"]["extensionProfile"]["extensions"]
    assert (extension["publisher"], extension["type"]) == ("Microsoft.ManagedServices", "ApplicationHealthLinux")
    env = node_file(scale_set, "/etc/gpufleet/bootstrap.env")
    assert f"GPUFLEET_HEALTH_PORT={extension['settings']['port']}" in env
    assert "gpufleet-health-endpoint.service" in cloud_init(scale_set)["runcmd"][1]
    repairs = scale_set.inputs["automaticRepairsPolicy"]
    assert repairs["enabled"] is True and repairs["repairAction"] == "Replace"


def test_scratch_stripes_the_nvme_disks_at_the_mount() -> None:
    scale_set = one(shipped(TRAIN), VMSS)
    assert "GPUFLEET_SCRATCH_MOUNT=/scratch" in node_file(scale_set, "/etc/gpufleet/bootstrap.env")
    assert "Microsoft NVMe Direct Disk" in node_file(scale_set, "/usr/local/sbin/gpufleet-scratch")


def test_unbaked_image_plans_without_an_image_reference_and_says_so() -> None:
    scale_set = one(shipped(TRAIN), VMSS)
    assert "imageReference" not in scale_set.inputs["virtualMachineProfile"]["storageProfile"]
    assert scale_set.inputs["tags"]["gpufleet:image-status"] == "unbaked"


@pytest.mark.parametrize(
    ("cluster", "field"),
    [
        (variant(group={"size": {"min": 0, "desired": 2, "max": 150}}), "node_groups[0].size.max"),
        (variant(network={"cidr": "172.16.0.0/16"}), "network.cidr"),
        (variant(group={"capacity": "reservation", "reservation_id": "/subscriptions/x/crg"}),
         "node_groups[0].capacity"),
    ],
    ids=["ib-group-of-150", "vnet-in-172-16", "reservation-on-nd"],
)
def test_invalid_azure_stacks_exit_2_naming_the_field(tmp_path: Path, cluster: dict, field: str) -> None:
    result = plan_cli(tmp_path, cluster)
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.output
    assert "Traceback" not in result.output


def test_ib_limit_names_the_support_request_path(tmp_path: Path) -> None:
    result = plan_cli(tmp_path, variant(group={"size": {"min": 0, "desired": 2, "max": 150}}))
    assert "at most 100 VMs" in result.output and "300 through a free Azure support request" in result.output


