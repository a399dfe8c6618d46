"""Azure encryption rules: every scale-set and managed disk on a disk encryption set holding a customer key;
Key Vaults recoverable (soft delete, purge protection); keys that rotate, and expire after they rotate; encryption
at host (advisory).

Property names are the engine's (camelCase); fix hints name the Python SDK's arguments (snake_case).
Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..meta import ADVISORY, MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, as_bool, get, items
from .resource_types import CUSTOMER_KEY, DISK, DISK_ENCRYPTION_SET, KEY, VAULT, VM_PROFILE, VMSS


def _customer_key(kind: Any) -> bool:
    """Whether an encryption type keeps a customer key (Azure's names all end in CustomerKey or -Keys)."""
    return kind is UNKNOWN or (isinstance(kind, str) and "CustomerKey" in kind)


def _des_problem(where: str, managed_disk: Any) -> Iterator[str]:
    if managed_disk is UNKNOWN:
        return
    des = get(managed_disk, "diskEncryptionSet", "id")
    if des is None or des == "":
        yield (
            f"{where}.managedDisk has no diskEncryptionSet, so it is encrypted with a platform key: set "
            f"{where}.managed_disk.disk_encryption_set.id to the cluster's disk encryption set"
        )


def check_disk_des(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == DISK:
        encryption = get(props, "encryption")
        if encryption is UNKNOWN:
            return
        des, kind = get(encryption, "diskEncryptionSetId"), get(encryption, "type")
        if des is UNKNOWN:
            return
        if not des or not _customer_key(kind):
            yield (
                "the disk is not encrypted with a customer key: set encryption.type = "
                f"'{CUSTOMER_KEY}' and encryption.disk_encryption_set_id"
            )
        return
    storage = get(props, VM_PROFILE, "storageProfile")
    if storage is UNKNOWN:
        return
    yield from _des_problem("storageProfile.osDisk", get(storage, "osDisk", "managedDisk"))
    disks = items(storage, "dataDisks")
    for index, disk in enumerate(disks if isinstance(disks, list) else []):
        yield from _des_problem(f"storageProfile.dataDisks[{index}]", get(disk, "managedDisk"))


def check_des_customer_key(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    kind = get(props, "encryptionType")
    if kind is not None and not _customer_key(kind):  # unset: Azure's default is the customer key
        yield f"encryption_type is {kind!r}: set it to '{CUSTOMER_KEY}' with active_key.key_url on a Key Vault key"
    key_url = get(props, "activeKey", "keyUrl")
    if key_url is None or key_url == "":
        yield "active_key.key_url is not set: point it at the Key Vault key that encrypts the disks"
    if as_bool(get(props, "rotationToLatestKeyVersionEnabled")) is False:
        yield "rotation_to_latest_key_version_enabled is False: a rotated key would leave disks on the old version"


def check_vault_recoverable(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    properties = get(props, "properties")
    if properties is UNKNOWN:
        return
    if as_bool(get(properties, "enableSoftDelete")) is False:
        yield "properties.enable_soft_delete is False: keep soft delete on (a disk encryption set requires it)"
    purge = get(properties, "enablePurgeProtection")
    if purge is not UNKNOWN and as_bool(purge) is not True:
        yield (
            "properties.enable_purge_protection is not True: a purged key makes every disk it encrypts unreadable; "
            "set it (disk encryption sets require it)"
        )


def check_key_rotation(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    policy = get(props, "properties", "rotationPolicy")
    if policy is UNKNOWN:
        return
    actions = items(policy, "lifetimeActions")
    if actions is UNKNOWN or any(a is UNKNOWN for a in actions):
        return
    kinds = [str(get(action, "action", "type") or "").lower() for action in actions]
    if "rotate" not in kinds:
        yield (
            "the key has no rotation policy with a 'rotate' lifetime action: set properties.rotation_policy."
            "lifetime_actions with action.type = 'rotate' and trigger.time_after_create (e.g. P90D)"
        )


_DURATION = re.compile(r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?")


def _days(duration: Any) -> int | None:
    """Roughly how many days an ISO 8601 duration of years, months and days spans (for ordering); None if other."""
    found = _DURATION.fullmatch(duration) if isinstance(duration, str) and duration != "P" else None
    if found is None:
        return None
    years, months, days = (int(part or 0) for part in found.groups())
    return years * 365 + months * 30 + days


def check_key_expiry(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    expires = get(props, "properties", "attributes", "expires")
    policy = get(props, "properties", "rotationPolicy")
    if expires is UNKNOWN or policy is UNKNOWN:
        return
    expiry = get(policy, "attributes", "expiryTime")
    if expiry is UNKNOWN:
        return
    if not expires and not expiry:
        yield (
            "the key's versions never expire: set properties.rotation_policy.attributes.expiry_time (e.g. P2Y, "
            "longer than the rotation's time_after_create)"
        )
        return
    actions = items(policy, "lifetimeActions")
    lifetime = _days(expiry)
    for action in [] if actions is UNKNOWN else actions:
        if str(get(action, "action", "type") or "").lower() != "rotate":
            continue
        after = _days(get(action, "trigger", "timeAfterCreate"))
        if lifetime is not None and after is not None and after >= lifetime:
            yield (
                f"the key rotates {get(action, 'trigger', 'timeAfterCreate')} after a version is made but versions "
                f"expire after {expiry}: rotate before they expire"
            )


def check_encryption_at_host(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    value = get(props, VM_PROFILE, "securityProfile", "encryptionAtHost")
    if value is not UNKNOWN and as_bool(value) is not True:
        yield (
            "virtual_machine_profile.security_profile.encryption_at_host is not True: temp disks and disk caches "
            "stay unencrypted by the customer key (storage.encryption_at_host; register the subscription feature "
            "Microsoft.Compute/EncryptionAtHost first)"
        )


RULES: list[Rule] = [
    resource_rule(
        "azure-disk-customer-key",
        "Scale-set OS and data disks and managed disks use a disk encryption set (customer-managed key).",
        MANDATORY, "azure", [VMSS, DISK], check_disk_des, checkov=("CKV_AZURE_2", "CKV_AZURE_93"),
    ),
    resource_rule(
        "azure-disk-encryption-set-customer-key",
        "Disk encryption sets encrypt with a Key Vault key and follow its rotations.",
        MANDATORY, "azure", [DISK_ENCRYPTION_SET], check_des_customer_key,
    ),
    resource_rule(
        "azure-key-vault-recoverable",
        "Key Vaults keep soft delete and purge protection on.",
        MANDATORY, "azure", [VAULT], check_vault_recoverable, checkov=("CKV_AZURE_42", "CKV_AZURE_110"),
    ),
    resource_rule(
        "azure-key-rotation",
        "Key Vault keys carry a rotation policy with a 'rotate' lifetime action.",
        MANDATORY, "azure", [KEY], check_key_rotation,
    ),
    resource_rule(
        "azure-key-expiry",
        "Key Vault key versions expire, after the rotation policy has made their successor.",
        MANDATORY, "azure", [KEY], check_key_expiry, checkov=("CKV_AZURE_40",),
    ),
    resource_rule(
        "azure-encryption-at-host",
        "Scale sets enable encryption at host (temp disks and caches under the customer key).",
        ADVISORY, "azure", [VMSS], check_encryption_at_host, checkov=("CKV_AZURE_97",),
    ),
]
