"""Alibaba Cloud encryption rules: customer KMS key on every disk, key rotation. Each fires and passes."""

from __future__ import annotations

import pytest
from alicloud_rule_args import DISK, INSTANCE, KEY, KMS_KEY_ID, LT, SC, validate

RULE = "alicloud-disk-cmk-encryption"


def test_scaling_configuration_unencrypted_system_disk_fails():
    (message,) = validate(RULE, SC, {"systemDiskEncrypted": False})
    assert message.startswith("the system disk is not encrypted: set system_disk_encrypted = True")


def test_scaling_configuration_default_service_key_fails_on_a_data_disk():
    props = {"systemDiskEncrypted": True, "systemDiskKmsKeyId": KMS_KEY_ID, "dataDisks": [{"encrypted": True}]}
    (message,) = validate(RULE, SC, props)
    assert message.startswith("data_disks[0] is encrypted with the default service key: set kms_key_id")


def test_scaling_configuration_with_customer_key_passes():
    props = {
        "systemDiskEncrypted": True, "systemDiskKmsKeyId": KMS_KEY_ID,
        "dataDisks": [{"encrypted": True, "kmsKeyId": KMS_KEY_ID}],
    }
    assert validate(RULE, SC, props) == []


def test_launch_template_without_system_disk_fails_and_with_key_passes():
    (message,) = validate(RULE, LT, {})
    assert message.startswith("system_disk is not declared")
    assert validate(RULE, LT, {"systemDisk": {"encrypted": True, "kmsKeyId": KMS_KEY_ID}}) == []


def test_instance_and_disk():
    (message,) = validate(RULE, INSTANCE, {"systemDiskEncrypted": True})
    assert "system_disk_kms_key_id" in message
    assert validate(RULE, INSTANCE, {"systemDiskEncrypted": True, "systemDiskKmsKeyId": KMS_KEY_ID}) == []
    (message,) = validate(RULE, DISK, {"encrypted": False})
    assert message.startswith("the disk is not encrypted")
    assert validate(RULE, DISK, {"encrypted": True, "kmsKeyId": KMS_KEY_ID}) == []


def test_key_rotation_off_fails_and_on_passes():
    (message,) = validate("alicloud-kms-key-rotation", KEY, {"protectionLevel": "SOFTWARE"})
    assert message.startswith("automatic_rotation is not set (Disabled): set automatic_rotation = 'Enabled'")
    (message,) = validate("alicloud-kms-key-rotation", KEY, {"automaticRotation": "Disabled"})
    assert "'Disabled'" in message
    enabled = {"automaticRotation": "Enabled", "rotationInterval": "365d"}
    assert validate("alicloud-kms-key-rotation", KEY, enabled) == []


def test_asymmetric_key_is_not_applicable():
    from pulumi_policy.policy import _NotApplicableError

    with pytest.raises(_NotApplicableError):
        validate("alicloud-kms-key-rotation", KEY, {"keySpec": "RSA_2048"})
