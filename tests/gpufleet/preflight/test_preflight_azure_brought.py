"""Azure preflight of what a stack brings (VNet and subnet, resource group, identity, disk key and vault, alarm target,
blob containers, capacity reservations) and of the images the lock pins, through recorded answers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from azure_replay import (
    INFER,
    OTHER_SUBSCRIPTION,
    SUBSCRIPTION,
    TRAIN,
    Replay,
    account,
    clients,
    cluster,
    fixture,
    only,
    run,
    usages_with,
)
from conftest import SHIPPED_STACKS, read_cluster

from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.lock import load_lock
from gpufleet.preflight.azure import preflight
from gpufleet.preflight.azure.account import IMAGE_PROVIDERS
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import validate_images
from gpufleet.yaml_model import read_yaml

ML = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/ml-rg"
NET = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/hub"
VAULT = ML + "/providers/Microsoft.KeyVault/vaults/mlkeys"
VERSION = "0f3d7c2b9a8e4d6f8b1c5a7e9d2f4b6c"
KEY_URL = f"https://mlkeys.vault.azure.net/keys/disks/{VERSION}"
IDENTITY = ML + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes"
ACTION_GROUP = ML + "/providers/microsoft.insights/actionGroups/oncall"
CONTAINER = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/data-rg/providers/Microsoft.Storage/storageAccounts/mldata"
             "/blobServices/default/containers/weights")
RESERVATIONS = ML + "/providers/Microsoft.Compute/capacityReservationGroups/a100"
GALLERY_VERSION = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/images-rg/providers/Microsoft.Compute/galleries/"
                   "gpufleet_images/images/cuda12.8-r580/versions/1.0.7")
BROUGHT = ("vnet", "subnet-24", "resource-group", "identity", "vault", "key-version", "action-group", "blob-container")


def brought(vnet_id: str = NET) -> ResolvedCluster:
    """The training stack with everything brought: network, resource group, identity, key, alarm target, container."""
    raw = copy.deepcopy(read_cluster(TRAIN))
    raw["network"] = {"vnet_id": vnet_id, "subnet_id": vnet_id + "/subnets/gpu", "zones": ["1"],
                      "resource_group": "ml-rg"}
    raw["storage"] = {"kms_key": KEY_URL, "key_vault_id": VAULT, "encryption_at_host": True}
    raw["identity"] = {"identity_id": IDENTITY, "blob_read_containers": [CONTAINER]}
    raw["monitoring"]["alarms"] = {"target": ACTION_GROUP, "low_utilisation": {"below_percent": 10, "for_minutes": 60}}
    return resolve_cluster(raw)


def brought_account(stack: ResolvedCluster, *answers: str) -> Replay:
    """A subscription holding every brought resource; `answers` replace recorded ones (same request)."""
    replay = account(stack)
    for name in (*BROUGHT, *answers):
        replay.add(fixture(name))
    return replay


def missing(replay: Replay, resource_id: str) -> Replay:
    return replay.answer(f"GET {resource_id}", fixture("error-resource-not-found", path=resource_id))


def test_everything_brought_and_in_place_has_no_findings() -> None:
    stack = brought()
    replay = brought_account(stack)
    assert run(stack, replay) == []
    asked = {path.split(" ", 1)[1].lower() for path in replay.asked}
    for resource_id in (NET, NET + "/subnets/gpu", VAULT, f"{VAULT}/keys/disks/versions/{VERSION}", IDENTITY,
                        ACTION_GROUP, CONTAINER, f"/subscriptions/{SUBSCRIPTION}/resourcegroups/ml-rg"):
        assert resource_id.lower() in asked, resource_id


def test_a_subnet_without_room_for_size_max_names_the_numbers() -> None:
    stack = brought()
    finding = only(run(stack, brought_account(stack, "subnet-28-busy")), "azure-subnet")
    assert finding.field == "network.subnet_id" and finding.blocking
    assert finding.says == ("subnet 10.60.1.0/28: 16 addresses, 5 reserved by Azure, 4 in use, 7 free; the node groups "
                            "at size.max need 16")
    assert "at least 16 free addresses (a /27" in finding.fix


def test_a_subnet_without_egress_is_advisory() -> None:
    stack = brought()
    finding = only(run(stack, brought_account(stack, "subnet-24-no-egress")), "azure-subnet")
    assert not finding.blocking and "no NAT gateway" in finding.says


def test_a_vnet_elsewhere_or_in_the_infiniband_range_is_refused() -> None:
    stack = brought()
    finding = only(run(stack, brought_account(stack, "vnet-westus")), "azure-vnet")
    assert finding.field == "network.vnet_id" and "in westus, the cluster in eastus" in finding.says
    finding = only(run(stack, brought_account(stack, "vnet-in-ib-range")), "azure-vnet")
    assert "172.16.0.0/12 overlaps 172.16.0.0/16" in finding.says


def test_a_vnet_that_does_not_exist_is_refused() -> None:
    stack = brought()
    finding = only(run(stack, missing(brought_account(stack), NET)), "azure-vnet")
    assert "no VNet hub in resource group net-rg" in finding.says and finding.blocking


def test_a_vnet_of_another_subscription_is_refused_without_asking() -> None:
    other = NET.replace(SUBSCRIPTION, OTHER_SUBSCRIPTION)
    stack = brought(vnet_id=other)
    replay = brought_account(stack)
    finding = only(run(stack, replay), "azure-vnet")
    assert f"subscription {OTHER_SUBSCRIPTION}" in finding.says
    assert not any(OTHER_SUBSCRIPTION in asked for asked in replay.asked)


def test_brought_ids_that_do_not_exist_are_refused_by_field() -> None:
    stack = brought()
    replay = brought_account(stack)
    for resource_id in (IDENTITY, ACTION_GROUP, CONTAINER, f"/subscriptions/{SUBSCRIPTION}/resourcegroups/ml-rg"):
        missing(replay, resource_id)
    findings = {f.field: f for f in run(stack, replay) if f.check == "azure-brought"}
    assert set(findings) == {"identity.identity_id", "monitoring.alarms.target", "identity.blob_read_containers[0]",
                             "network.resource_group"}
    assert all(f.blocking for f in findings.values())
    assert "no resource group ml-rg in subscription" in findings["network.resource_group"].says


def test_the_key_vault_in_another_region_without_purge_protection_is_refused() -> None:
    stack = brought()
    replay = brought_account(stack, "vault-westus-no-purge-protection")
    findings = [f for f in run(stack, replay) if f.check == "azure-key"]
    says = " | ".join(f.says for f in findings)
    assert {f.field for f in findings} == {"storage.key_vault_id"} and len(findings) == 2
    assert "the vault is in westus, the cluster in eastus" in says and "purge protection off" in says


def test_a_disabled_or_missing_key_version_is_refused() -> None:
    stack = brought()
    finding = only(run(stack, brought_account(stack, "key-version-disabled")), "azure-key")
    assert finding.field == "storage.kms_key" and f"version {VERSION} is disabled" in finding.says
    replay = missing(brought_account(stack), f"{VAULT}/keys/disks/versions/{VERSION}")
    assert "has no key disks with version" in only(run(stack, replay), "azure-key").says


def test_a_brought_key_for_managed_lustre_must_be_rsa_2048() -> None:
    raw = copy.deepcopy(read_cluster(TRAIN))  # storage.shared with a created network, and a brought key
    raw["storage"] = {**raw["storage"], "kms_key": KEY_URL, "key_vault_id": VAULT}
    stack = resolve_cluster(raw)
    replay = account(stack).add(fixture("vault")).add(fixture("key-version"))
    finding = only(run(stack, replay), "azure-key")
    assert finding.field == "storage.kms_key" and "RSA 3072; Azure Managed Lustre" in finding.says
    key = fixture("key-version")
    key["body"]["properties"]["keySize"] = 2048
    assert run(stack, replay.add(key)) == []


def reserved(size: str = "Standard_NC24ads_A100_v4") -> tuple[ResolvedCluster, Replay]:
    stack = cluster(INFER, group={"capacity": "reservation", "reservation_id": RESERVATIONS, "idle": None})
    # On demand, the 8 x 24 vCPUs count against the family: give it room.
    replay = account(stack, usages=usages_with({"StandardNCADSA100v4Family": (0, 192)}))
    replay.add(fixture("capacity-reservation-group"))
    replay.add(fixture("capacity-reservation" if size.startswith("Standard_NC") else "capacity-reservation-other-size"))
    return stack, replay


def test_a_reservation_of_the_groups_size_in_its_zone_passes() -> None:
    stack, replay = reserved()
    assert run(stack, replay) == []
    assert any(path.endswith("/capacityReservations/nc24") for path in replay.asked)


def test_a_reservation_group_without_the_size_is_refused() -> None:
    stack, replay = reserved("Standard_D8s_v5")
    finding = only(run(stack, replay), "azure-reservation")
    assert finding.field == "node_groups[0].reservation_id" and "reserves no Standard_NC24ads_A100_v4" in finding.says


def test_a_reservation_short_of_size_max_is_advisory_and_one_in_another_zone_refused() -> None:
    stack, replay = reserved()
    short = fixture("capacity-reservation")
    short["body"]["sku"]["capacity"] = 4
    finding = only(run(stack, replay.add(short)), "azure-reservation")
    assert not finding.blocking and finding.field == "node_groups[0].size.max" and "4 nodes would run" in finding.says
    elsewhere = fixture("capacity-reservation")
    elsewhere["body"]["zones"] = ["2"]
    finding = only(run(stack, replay.add(elsewhere)), "azure-reservation")
    assert finding.blocking and "in zones 2, the node group in 1" in finding.says


def baked_lock(tmp_path: Path) -> Any:
    """The shipped lock with the Azure eastus image of every profile baked as a gallery image version."""
    lock = (SHIPPED_STACKS.parent / "images" / "lock.yaml").read_text()
    unbaked = "eastus: {id: null, status: unbaked, stack: azure-images}"
    assert unbaked in lock
    (tmp_path / "lock.yaml").write_text(lock.replace(unbaked, f'eastus: {{id: "{GALLERY_VERSION}", status: baked, '
                                                              'stack: azure-images}'))
    return load_lock(tmp_path / "lock.yaml")


def test_a_pinned_gallery_version_replicated_to_the_region_passes(tmp_path: Path) -> None:
    stack = resolve_cluster(read_cluster(TRAIN), lock=baked_lock(tmp_path))
    replay = account(stack).add(fixture("gallery-image-version"))
    assert run(stack, replay) == []
    assert any(GALLERY_VERSION.lower() in path.lower() for path in replay.asked)


def test_a_pinned_gallery_version_not_in_the_region_or_gone_is_refused(tmp_path: Path) -> None:
    stack = resolve_cluster(read_cluster(TRAIN), lock=baked_lock(tmp_path))
    finding = only(run(stack, account(stack).add(fixture("gallery-image-version-southcentral-only"))), "azure-image")
    assert finding.field == "image" and "replicated to South Central US, not eastus" in finding.says
    finding = only(run(stack, missing(account(stack), GALLERY_VERSION)), "azure-image")
    assert "does not exist or this subscription cannot see" in finding.says


def images_account(usages: str | dict[str, Any] = "usages-eastus") -> tuple[Any, Replay]:
    config = read_yaml(SHIPPED_STACKS / "Pulumi.azure-images.yaml")["config"]
    spec = validate_images(config["gpufleet:images"])
    replay = Replay()
    for namespace in IMAGE_PROVIDERS:
        replay.add(fixture("provider-registered", namespace=namespace))
    replay.add(fixture("skus-eastus")).add(usages if isinstance(usages, dict) else fixture(usages))
    return spec, replay.add(fixture("vm-image"))


def test_an_image_stack_with_its_base_image_and_build_quota_passes() -> None:
    spec, replay = images_account()
    assert preflight(spec, clients(replay)) == []
    assert any("/versions/22.04.202510230" in path for path in replay.asked)


def test_an_image_stack_without_its_base_image_or_build_quota_is_refused() -> None:
    spec, replay = images_account(usages_with({"standardDSv5Family": (96, 100)}))
    image = fixture("vm-image")["request"].split(" ", 1)[1]
    findings = preflight(spec, clients(missing(replay, image)))
    assert only(findings, "azure-image").field == "regions[0]"
    quota = only(findings, "azure-quota")
    assert quota.field == "build_vm_size" and "limit 100, 96 in use, 4 free" in quota.says and "needs 8" in quota.says


def test_a_vault_of_another_subscription_than_the_one_deployed_into_is_refused() -> None:
    # The stack names no id of its own (a created network and identity), so offline the vault's subscription passes.
    raw = copy.deepcopy(read_cluster(TRAIN))
    other_vault = VAULT.replace(SUBSCRIPTION, OTHER_SUBSCRIPTION)
    raw["storage"] = {"kms_key": KEY_URL, "key_vault_id": other_vault, "encryption_at_host": True}
    stack = resolve_cluster(raw)
    replay = account(stack).add(fixture("vault", subscription=OTHER_SUBSCRIPTION))
    replay.add(fixture("key-version", subscription=OTHER_SUBSCRIPTION))
    finding = only(run(stack, replay), "azure-key-account")
    assert (finding.field, finding.blocking) == ("storage.key_vault_id", True)
    assert OTHER_SUBSCRIPTION in finding.says and f"preflight runs as account {SUBSCRIPTION}" in finding.says
