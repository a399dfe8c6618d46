"""The KMS key that encrypts node disks: a key in the stack's KMS instance that rotates itself; or a brought key.

The key is created in the KMS instance `storage.dkms_instance_id` (CreateKey DKMSInstanceId): without one KMS makes
the region's default key, one per account and region, so a second stack could not create its own (spec check
rules.key_in_a_kms_instance). The instance decides the protection level (pulumi-alicloud kms.Key protection_level:
ignored with dkms_instance_id), so none is sent. Keys of a hardware (HSM) instance cannot rotate automatically
(kms.Key rotation_interval), and this key does: use a software key management instance, or bring a key.
Prerequisite, once per account: ECS encrypts disks with a customer key through the service role
AliyunECSDiskEncryptDefaultRole, which is authorised in the console (ECS > Disks > encryption: "Authorize",
or RAM quick authorisation of AliyunECSDiskEncryptDefaultRole) before the first encrypted disk; without it the
launch fails (ECS API ModifyDiskDefaultKMSKeyId notes). gpufleet does not create that role.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

ROTATION_INTERVAL = "365d"  # the longest a software key allows (7 to 365 days)
PENDING_WINDOW_DAYS = 30  # a mistaken destroy can be cancelled for a month


def cluster_key(name: str, base: str, instance_id: str, protect: bool, tags: dict[str, str],
                opts: pulumi.ResourceOptions) -> alicloud.kms.Key:
    """The key, and its alias named for `base` (the cluster in its environment: aliases are unique in a region)."""
    key = alicloud.kms.Key(
        f"{name}-key",
        description=f"gpufleet {base}: node system and data disks",
        dkms_instance_id=instance_id,
        key_spec="Aliyun_AES_256",
        key_usage="ENCRYPT/DECRYPT",
        automatic_rotation="Enabled",
        rotation_interval=ROTATION_INTERVAL,
        pending_window_in_days=PENDING_WINDOW_DAYS,
        deletion_protection="Enabled" if protect else "Disabled",
        tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect)),
    )
    alicloud.kms.Alias(f"{name}-key", alias_name=f"alias/gpufleet-{base}", key_id=key.id, opts=opts)
    return key
