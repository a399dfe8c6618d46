"""AWS encryption rules: EBS volumes and block devices on customer-managed KMS keys; key rotation and
deletion window.

Property names are the engine's (camelCase); fix hints name the Python SDK's arguments (snake_case).
Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.keys import provider_managed

from ..meta import MANDATORY, Config, NotApplicable, Props, Rule, resource_rule
from ..props import UNKNOWN, as_bool, as_int, get, items
from .resource_types import (
    DISTRIBUTION_CONFIGURATION,
    EBS_VOLUME,
    IMAGE_COMPONENT,
    IMAGE_RECIPE,
    INSTANCE,
    KMS_KEY,
    LAUNCH_TEMPLATE,
)


def _cmk_problem(where: str, encrypted: Any, kms_key_id: Any) -> Iterator[str]:
    if as_bool(encrypted) is not True and encrypted is not UNKNOWN:
        yield f"{where} is not encrypted: set encrypted = True and kms_key_id to a customer-managed KMS key"
        return
    if kms_key_id is None or (isinstance(kms_key_id, str) and not kms_key_id.strip()):
        yield (
            f"{where} is encrypted with the AWS-managed key: set kms_key_id to a customer-managed KMS key "
            "(storage.kms_key)"
        )
    elif provider_managed("aws", kms_key_id):
        yield (
            f"{where} uses the AWS-managed key {kms_key_id}: set kms_key_id to a customer-managed KMS key "
            "(storage.kms_key)"
        )


def check_volume_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    yield from _cmk_problem("the volume", get(props, "encrypted"), get(props, "kmsKeyId"))


def check_block_device_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == INSTANCE:
        root = get(props, "rootBlockDevice")
        if root is None:
            yield (
                "the root volume is not declared, so it takes the AMI's (possibly unencrypted) settings: set "
                "root_block_device with encrypted = True and kms_key_id"
            )
        elif root is not UNKNOWN:
            yield from _cmk_problem("root_block_device", get(root, "encrypted"), get(root, "kmsKeyId"))
        devices = items(props, "ebsBlockDevices")
        for index, device in enumerate(devices if isinstance(devices, list) else []):
            if device is not UNKNOWN:
                yield from _cmk_problem(
                    f"ebs_block_devices[{index}]", get(device, "encrypted"), get(device, "kmsKeyId")
                )
        return
    mappings = items(props, "blockDeviceMappings")
    if mappings is UNKNOWN:
        return
    if not mappings:
        yield (
            "no block_device_mappings: the root volume takes the AMI's (possibly unencrypted) settings; "
            "declare it with ebs.encrypted = 'true' and ebs.kms_key_id"
        )
    for index, mapping in enumerate(mappings):
        ebs = get(mapping, "ebs")
        if ebs is None or ebs is UNKNOWN:
            continue  # instance-store or no-device mappings carry no EBS volume
        yield from _cmk_problem(
            f"block_device_mappings[{index}].ebs", get(ebs, "encrypted"), get(ebs, "kmsKeyId")
        )


def check_kms_rotation(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    spec = get(props, "customerMasterKeySpec") or get(props, "keySpec")
    if isinstance(spec, str) and spec != "SYMMETRIC_DEFAULT":
        raise NotApplicable(f"key spec {spec} cannot rotate automatically")
    rotation = get(props, "enableKeyRotation")
    if rotation is not UNKNOWN and as_bool(rotation) is not True:
        yield "automatic key rotation is off: set enable_key_rotation = True"


def check_kms_deletion_window(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    days = as_int(get(props, "deletionWindowInDays"))
    if days is not None and days < 7:
        yield f"deletion_window_in_days is {days}: set it to at least 7 (30 is the default)"


def check_image_component_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    key = get(props, "kmsKeyId")
    if key is UNKNOWN:
        return
    if not key or provider_managed("aws", key):
        yield (
            "the Image Builder component (the installer it runs) is encrypted with a key Image Builder owns: set "
            "kms_key_id to the customer-managed key the recipe's volumes use"
        )


def check_image_pipeline_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    """The recipe's build volumes and every region's AMI copy: the stack's customer-managed key."""
    if resource_type == IMAGE_RECIPE:
        mappings = items(props, "blockDeviceMappings")
        for index, mapping in enumerate(mappings if isinstance(mappings, list) else []):
            ebs = get(mapping, "ebs")
            if isinstance(ebs, dict):
                yield from _cmk_problem(
                    f"block_device_mappings[{index}].ebs", get(ebs, "encrypted"), get(ebs, "kmsKeyId")
                )
        return
    distributions = items(props, "distributions")
    for index, distribution in enumerate(distributions if isinstance(distributions, list) else []):
        ami = get(distribution, "amiDistributionConfiguration")
        if ami is UNKNOWN:
            continue
        key = get(ami, "kmsKeyId") if isinstance(ami, dict) else None
        region = get(distribution, "region")
        # No key: the AMI copy keeps its snapshots' encryption, the recipe's key only in the build region.
        yield from _cmk_problem(f"distributions[{index}] ({region}) ami_distribution_configuration", True, key)


RULES: list[Rule] = [
    resource_rule(
        "aws-ebs-volume-cmk-encryption",
        "EBS volumes are encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [EBS_VOLUME],
        check_volume_cmk,
        cis="2.2.1 (v3.0.0, account default; related)",
        checkov=("CKV_AWS_3", "CKV_AWS_189"),
    ),
    resource_rule(
        "aws-block-device-cmk-encryption",
        "Launch-template and instance block devices are encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, INSTANCE],
        check_block_device_cmk,
        checkov=("CKV_AWS_8",),
    ),
    resource_rule(
        "aws-kms-key-rotation",
        "Customer-managed symmetric KMS keys rotate automatically.",
        MANDATORY,
        "aws",
        [KMS_KEY],
        check_kms_rotation,
        cis="3.6 (v3.0.0)",
        checkov=("CKV_AWS_7",),
    ),
    resource_rule(
        "aws-kms-key-deletion-window",
        "KMS keys keep a deletion window of at least 7 days.",
        MANDATORY,
        "aws",
        [KMS_KEY],
        check_kms_deletion_window,
    ),
    resource_rule(
        "aws-image-component-cmk",
        "Image Builder components are encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [IMAGE_COMPONENT],
        check_image_component_cmk,
        checkov=("CKV_AWS_180",),
    ),
    resource_rule(
        "aws-image-pipeline-cmk",
        "Image Builder recipes' volumes and every distributed AMI are encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [IMAGE_RECIPE, DISTRIBUTION_CONFIGURATION],
        check_image_pipeline_cmk,
    ),
]
