"""Alibaba Cloud encryption rules: system and data disks encrypted with a customer KMS key; key rotation.

Property names are the engine's (camelCase, as pulumi-alicloud serializes them); fix hints name the Python
SDK's arguments (snake_case). Values unknown during preview are skipped; only known-bad values fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.keys import provider_managed

from ..meta import MANDATORY, Config, NotApplicable, Props, Rule, resource_rule
from ..props import UNKNOWN, as_bool, get, items
from .resource_types import DISK, INSTANCE, KMS_KEY, LAUNCH_TEMPLATE, SCALING_CONFIGURATION

# Symmetric key specs (KMS CreateKey KeySpec); the others are asymmetric and do not rotate automatically.
SYMMETRIC_SPECS = ("Aliyun_AES_256", "Aliyun_AES_128", "Aliyun_AES_192", "Aliyun_SM4")


def _cmk_problem(where: str, encrypted_arg: str, key_arg: str, encrypted: Any, kms_key_id: Any) -> Iterator[str]:
    if encrypted is UNKNOWN:
        return
    if as_bool(encrypted) is not True:
        yield f"{where} is not encrypted: set {encrypted_arg} = True and {key_arg} to the stack's KMS key"
    elif kms_key_id is None or (isinstance(kms_key_id, str) and not kms_key_id.strip()):
        yield (
            f"{where} is encrypted with the default service key: set {key_arg} to a customer KMS key "
            "(storage.kms_key)"
        )
    elif provider_managed("alicloud", kms_key_id):
        yield (
            f"{where} uses the service key {kms_key_id}: set {key_arg} to a customer KMS key (storage.kms_key)"
        )


def _data_disks(props: Props) -> Iterator[str]:
    disks = items(props, "dataDisks")
    for index, disk in enumerate(disks if isinstance(disks, list) else []):
        if disk is not UNKNOWN:
            yield from _cmk_problem(
                f"data_disks[{index}]", "encrypted", "kms_key_id", get(disk, "encrypted"), get(disk, "kmsKeyId")
            )


def check_disk_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == DISK:
        yield from _cmk_problem("the disk", "encrypted", "kms_key_id", get(props, "encrypted"), get(props, "kmsKeyId"))
        return
    if resource_type == LAUNCH_TEMPLATE:
        system = get(props, "systemDisk")
        if system is None:
            yield (
                "system_disk is not declared, so the system disk is not encrypted: declare it with "
                "encrypted = True and kms_key_id"
            )
        elif system is not UNKNOWN:
            yield from _cmk_problem(
                "system_disk", "encrypted", "kms_key_id", get(system, "encrypted"), get(system, "kmsKeyId")
            )
    else:
        yield from _cmk_problem(
            "the system disk", "system_disk_encrypted", "system_disk_kms_key_id",
            get(props, "systemDiskEncrypted"), get(props, "systemDiskKmsKeyId"),
        )
    yield from _data_disks(props)


def check_kms_rotation(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    spec = get(props, "keySpec")
    if isinstance(spec, str) and spec not in SYMMETRIC_SPECS:
        raise NotApplicable(f"key spec {spec} is asymmetric and cannot rotate automatically")
    rotation = get(props, "automaticRotation")
    if rotation is UNKNOWN or rotation == "Enabled":
        return
    shown = "not set (Disabled)" if rotation is None else repr(rotation)
    yield (
        f"automatic_rotation is {shown}: set automatic_rotation = 'Enabled' with a rotation_interval "
        "(e.g. '365d') on a SOFTWARE-protected key"
    )


RULES: list[Rule] = [
    resource_rule(
        "alicloud-disk-cmk-encryption",
        "System and data disks of scaling configurations, launch templates, instances and disks are encrypted "
        "with a customer KMS key.",
        MANDATORY,
        "alicloud",
        [SCALING_CONFIGURATION, LAUNCH_TEMPLATE, INSTANCE, DISK],
        check_disk_cmk,
        checkov=("CKV_ALI_7", "CKV_ALI_8", "CKV_ALI_32"),
    ),
    resource_rule(
        "alicloud-kms-key-rotation",
        "Customer symmetric KMS keys rotate automatically.",
        MANDATORY,
        "alicloud",
        [KMS_KEY],
        check_kms_rotation,
        checkov=("CKV_ALI_27",),
    ),
]
