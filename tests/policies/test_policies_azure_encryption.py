"""Azure encryption rules: each fails on a bad resource and passes a good one."""

from __future__ import annotations

from azure_rule_args import DES, VMSS, scale_set, validate

DISK = "azure-native:compute:Disk"
DES_TYPE = "azure-native:compute:DiskEncryptionSet"
VAULT = "azure-native:keyvault:Vault"
KEY = "azure-native:keyvault:Key"


def test_scale_set_disks_need_the_encryption_set() -> None:
    assert validate("azure-disk-customer-key", VMSS, scale_set()) == []
    bad = scale_set(**{"virtualMachineProfile.storageProfile.osDisk.managedDisk": {"storageAccountType": "Premium_LRS"},
                       "virtualMachineProfile.storageProfile.dataDisks.0": {"lun": 0, "managedDisk": {}}})
    found = validate("azure-disk-customer-key", VMSS, bad)
    assert [m.split(" has no")[0] for m in found] == [
        "storageProfile.osDisk.managedDisk", "storageProfile.dataDisks[0].managedDisk"
    ]


def test_managed_disk_with_platform_key_fails_and_customer_key_passes() -> None:
    (message,) = validate("azure-disk-customer-key", DISK, {"encryption": {"type": "EncryptionAtRestWithPlatformKey"}})
    assert "not encrypted with a customer key" in message
    good = {"encryption": {"type": "EncryptionAtRestWithCustomerKey", "diskEncryptionSetId": DES}}
    assert validate("azure-disk-customer-key", DISK, good) == []


def test_disk_encryption_set_needs_a_key_and_latest_version() -> None:
    good = {"encryptionType": "EncryptionAtRestWithCustomerKey", "rotationToLatestKeyVersionEnabled": True,
            "activeKey": {"keyUrl": "https://kv.vault.azure.net/keys/disks"}}
    assert validate("azure-disk-encryption-set-customer-key", DES_TYPE, good) == []
    bad = {**good, "rotationToLatestKeyVersionEnabled": False, "activeKey": {}}
    found = validate("azure-disk-encryption-set-customer-key", DES_TYPE, bad)
    assert [m.split(" ")[0] for m in found] == ["active_key.key_url", "rotation_to_latest_key_version_enabled"]


def test_vault_without_purge_protection_fails() -> None:
    (message,) = validate("azure-key-vault-recoverable", VAULT, {"properties": {"enableSoftDelete": True}})
    assert message.startswith("properties.enable_purge_protection is not True")
    good = {"properties": {"enableSoftDelete": True, "enablePurgeProtection": True}}
    assert validate("azure-key-vault-recoverable", VAULT, good) == []


def test_key_without_rotate_action_fails() -> None:
    notify = {"properties": {"rotationPolicy": {"lifetimeActions": [{"action": {"type": "notify"}}]}}}
    (message,) = validate("azure-key-rotation", KEY, notify)
    assert "'rotate' lifetime action" in message
    rotate = {"properties": {"rotationPolicy": {"lifetimeActions": [
        {"action": {"type": "rotate"}, "trigger": {"timeAfterCreate": "P90D"}}]}}}
    assert validate("azure-key-rotation", KEY, rotate) == []


def test_encryption_at_host_is_advised() -> None:
    without = scale_set(**{"virtualMachineProfile.securityProfile": None})
    (message,) = validate("azure-encryption-at-host", VMSS, without)
    assert "encryption_at_host is not True" in message and "Microsoft.Compute/EncryptionAtHost" in message
    assert validate("azure-encryption-at-host", VMSS, scale_set()) == []


def rotating(expiry: str | None, rotate_after: str = "P1Y") -> dict:
    policy: dict = {"lifetimeActions": [{"action": {"type": "rotate"}, "trigger": {"timeAfterCreate": rotate_after}}]}
    if expiry is not None:
        policy["attributes"] = {"expiryTime": expiry}
    return {"properties": {"kty": "RSA", "rotationPolicy": policy}}


def test_key_versions_that_never_expire_fail() -> None:
    (message,) = validate("azure-key-expiry", KEY, rotating(None))
    assert "never expire" in message and "expiry_time" in message
    assert validate("azure-key-expiry", KEY, {"properties": {"kty": "RSA"}})


def test_key_that_expires_before_it_rotates_fails() -> None:
    (message,) = validate("azure-key-expiry", KEY, rotating("P1Y", rotate_after="P18M"))
    assert "rotates P18M after a version is made but versions expire after P1Y" in message


def test_key_that_rotates_before_its_versions_expire_passes() -> None:
    assert validate("azure-key-expiry", KEY, rotating("P2Y")) == []
    assert validate("azure-key-expiry", KEY, {"properties": {"attributes": {"expires": 1893456000}}}) == []
