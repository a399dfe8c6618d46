"""Azure create-path checks a first real deploy needs, each refused before any resource with exit 2 by field
path: egress on a created network is one zonal NAT gateway; no Regular base inside a Spot scale set (no terminate
notification); admin keys the Compute API takes; the OS disk's delete option on Flexible scale sets only."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure_plans import INFER, TRAIN, VMSS, one, plan_cli, plan_variant, shipped, variant
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def test_a_created_network_over_several_zones_is_refused_naming_network_zones(tmp_path: Path) -> None:
    cluster = variant(INFER, network={"zones": ["1", "2", "3"]})
    result = plan_cli(tmp_path, cluster)
    assert result.exit_code == 2
    assert "network.zones" in result.output and "one zonal NAT gateway" in result.output


def test_a_brought_subnet_may_span_zones(tmp_path: Path) -> None:
    group = "/subscriptions/11111111-1111-4111-8111-111111111111/resourceGroups/net"
    vnet = f"{group}/providers/Microsoft.Network/virtualNetworks/v"
    network = {"cidr": None, "zones": ["1", "2", "3"], "vnet_id": vnet, "subnet_id": f"{vnet}/subnets/nodes"}
    result = plan_cli(tmp_path, variant(INFER, network=network))
    assert "one zonal NAT gateway" not in result.output
    assert result.exit_code in (0, 1), result.output


def test_a_regular_base_under_spot_is_refused_naming_on_demand_base(tmp_path: Path) -> None:
    result = plan_cli(tmp_path, variant(INFER, group={"capacity": "spot", "on_demand_base": 1}))
    assert result.exit_code == 2
    assert "node_groups[0].on_demand_base" in result.output and "no terminate notification" in result.output


def test_no_spot_scale_set_claims_a_checkpoint_on_scale_in(tmp_path: Path) -> None:
    spot = one(shipped(INFER), VMSS).inputs["virtualMachineProfile"]
    assert spot["priority"] == "Spot" and "scheduledEventsProfile" not in spot
    regular = one(plan_variant(tmp_path, variant(INFER, group={"capacity": "on-demand"})), VMSS)
    notice = regular.inputs["virtualMachineProfile"]["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert notice["enable"] is True


def _openssh(key) -> str:
    return key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode() + " me@example.com"


@pytest.mark.parametrize(("key", "reason"), [
    (lambda: ec.generate_private_key(ec.SECP256R1()), "a ecdsa-sha2-nistp256 key: Azure takes ssh-rsa"),
    (lambda: rsa.generate_private_key(public_exponent=65537, key_size=1024), "an RSA key of 1024 bits"),
])
def test_an_admin_key_azure_refuses_is_exit_2(tmp_path: Path, key, reason: str) -> None:
    result = plan_cli(tmp_path, variant(INFER, admin_ssh_public_key=_openssh(key())))
    assert result.exit_code == 2
    assert "admin_ssh_public_key" in result.output and reason in result.output


@pytest.mark.parametrize("key", [
    lambda: ed25519.Ed25519PrivateKey.generate(),
    lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
])
def test_rsa_2048_and_ed25519_admin_keys_plan(tmp_path: Path, key) -> None:
    cluster = variant(INFER, admin_ssh_public_key=_openssh(key()))
    (public,) = one(plan_variant(tmp_path, cluster), VMSS).inputs["virtualMachineProfile"]["osProfile"][
        "linuxConfiguration"]["ssh"]["publicKeys"]
    assert public["keyData"] == cluster["admin_ssh_public_key"]


def test_the_os_disk_delete_option_is_sent_to_flexible_scale_sets_only() -> None:
    def os_disk(stack: str) -> dict:
        return one(shipped(stack), VMSS).inputs["virtualMachineProfile"]["storageProfile"]["osDisk"]

    assert "deleteOption" not in os_disk(TRAIN)  # Uniform (InfiniBand)
    assert os_disk(INFER)["deleteOption"] == "Delete"  # Flexible
