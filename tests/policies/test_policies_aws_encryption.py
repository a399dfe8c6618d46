"""AWS encryption rules: CMK on volumes and block devices, key rotation and deletion window.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

import pytest
from aws_rule_args import CMK, INSTANCE, LT, validate


def test_volume_unencrypted_fails():
    (message,) = validate("aws-ebs-volume-cmk-encryption", "aws:ebs/volume:Volume", {"encrypted": False})
    assert "not encrypted" in message and "kms_key_id" in message


def test_volume_aws_managed_key_fails():
    props = {"encrypted": True, "kmsKeyId": "alias/aws/ebs"}
    (message,) = validate("aws-ebs-volume-cmk-encryption", "aws:ebs/volume:Volume", props)
    assert "AWS-managed key alias/aws/ebs" in message


def test_volume_with_cmk_passes():
    props = {"encrypted": True, "kmsKeyId": CMK}
    assert validate("aws-ebs-volume-cmk-encryption", "aws:ebs/volume:Volume", props) == []


def test_launch_template_block_device_without_cmk_fails():
    props = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]}
    (message,) = validate("aws-block-device-cmk-encryption", LT, props)
    assert message.startswith("block_device_mappings[0].ebs is encrypted with the AWS-managed key")


def test_launch_template_unencrypted_string_false_fails():
    props = {"blockDeviceMappings": [{"ebs": {"encrypted": "false", "kmsKeyId": CMK}}]}
    (message,) = validate("aws-block-device-cmk-encryption", LT, props)
    assert "is not encrypted" in message


def test_launch_template_block_device_with_cmk_passes():
    props = {
        "blockDeviceMappings": [
            {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "kmsKeyId": CMK}},
            {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
        ]
    }
    assert validate("aws-block-device-cmk-encryption", LT, props) == []


def test_instance_without_root_device_fails_and_with_cmk_passes():
    (message,) = validate("aws-block-device-cmk-encryption", INSTANCE, {})
    assert "root_block_device" in message
    props = {"rootBlockDevice": {"encrypted": True, "kmsKeyId": CMK}}
    assert validate("aws-block-device-cmk-encryption", INSTANCE, props) == []


def test_kms_rotation_off_fails_on_passes():
    (message,) = validate("aws-kms-key-rotation", "aws:kms/key:Key", {"enableKeyRotation": False})
    assert "enable_key_rotation = True" in message
    assert validate("aws-kms-key-rotation", "aws:kms/key:Key", {"enableKeyRotation": True}) == []


def test_kms_rotation_not_applicable_to_asymmetric_keys():
    from pulumi_policy.policy import _NotApplicableError

    with pytest.raises(_NotApplicableError):
        validate("aws-kms-key-rotation", "aws:kms/key:Key", {"customerMasterKeySpec": "RSA_2048"})


def test_kms_deletion_window_short_fails_default_passes():
    (message,) = validate("aws-kms-key-deletion-window", "aws:kms/key:Key", {"deletionWindowInDays": 5})
    assert "deletion_window_in_days is 5" in message
    assert validate("aws-kms-key-deletion-window", "aws:kms/key:Key", {}) == []
    assert validate("aws-kms-key-deletion-window", "aws:kms/key:Key", {"deletionWindowInDays": 7}) == []
