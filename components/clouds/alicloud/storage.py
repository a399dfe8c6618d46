"""The KMS key that encrypts node disks: a software-protected key that rotates itself; or a brought key.

HSM-protected keys cannot rotate automatically (pulumi-alicloud kms.Key, rotation_interval), so the key is
SOFTWARE. Prerequisite, once per account: ECS encrypts disks with a customer key through the service role
AliyunECSDiskEncryptDefaultRole, which is authorised in the console (ECS > Disks > encryption: "Authorize",
or RAM quick authorisation of AliyunECSDiskEncryptDefaultRole) before the first encrypted disk; without it the
launch fails (ECS API ModifyDiskDefaultKMSKeyId notes). gpufleet does not create that role.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

ROTATION_INTERVAL = "365d"  # the longest a software key allows (7 to 365 days)
PENDING_WINDOW_DAYS = 30  # a mistaken destroy can be cancelled for a month


def cluster_key(name: str, protect: bool, tags: dict[str, str], opts: pulumi.ResourceOptions) -> alicloud.kms.Key:
    key = alicloud.kms.Key(
        f"{name}-key",
        description=f"gpufleet {name}: node system and data disks",
        key_spec="Aliyun_AES_256",
        key_usage="ENCRYPT/DECRYPT",
        protection_level="SOFTWARE",
        automatic_rotation="Enabled",
        rotation_interval=ROTATION_INTERVAL,
        pending_window_in_days=PENDING_WINDOW_DAYS,
        deletion_protection="Enabled" if protect else "Disabled",
        tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect)),
    )
    alicloud.kms.Alias(f"{name}-key", alias_name=f"alias/gpufleet-{name}", key_id=key.id, opts=opts)
    return key
