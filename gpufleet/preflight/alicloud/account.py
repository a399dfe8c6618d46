"""Keys, roles, images and alarm contacts the stack names or the program assumes exist.

API references (response shapes also in Alibaba's OpenAPI metadata for each product, mirrored in
dew-serverless/acs-sdk-php data/<product>/<version>/api-docs.json):
- KMS DescribeKey (alibabacloud.com/help/en/kms/developer-reference/api-kms-2016-01-20-describekey):
  KeyMetadata.KeyState (Enabled, Disabled, PendingDeletion, ...), KeyUsage; 404 Forbidden.KeyNotFound, 400
  InvalidParameter.
- KMS GetKmsInstance (.../api-kms-2016-01-20-getkmsinstance): KmsInstance.Status Uninitialized | Connecting |
  Connected | Disconnected | Error; KMS answers a missing instance Forbidden.DKMSInstanceNotFound (CreateKey 403) or
  Forbidden.ResourceNotFound (404, the secrets operations).
- RAM GetRole (alibabacloud.com/help/en/ram/developer-reference/api-ram-2015-05-01-getrole): Role.RoleName,
  Role.AssumeRolePolicyDocument, Role.Arn (acs:ram::ACCOUNT:role/NAME: the caller's account, which judges a brought
  key's ARN); a missing role is EntityNotExist.Role (RAM API errors, HTTP 404).
- ECS DescribeImages (alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeimages): ImageId,
  Status (default filter Available only), ImageOwnerAlias system | self | others | marketplace; Images.Image[].
- CloudMonitor DescribeContactGroupList (alibabacloud.com/help/en/cms/developer-reference/
  api-cms-2019-01-01-describecontactgrouplist): ContactGroupList.ContactGroup[].Name, Total; PageNumber/PageSize;
  its error codes include ResourceNotFound with HTTP 200 (Success false).
ECS encrypts disks with a customer key through AliyunECSDiskEncryptDefaultRole, authorised once per account
(components/clouds/alicloud/storage.py); every gpufleet node disk is encrypted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from alibabacloud_cms20190101 import models as cms
from alibabacloud_ecs20140526 import models as ecs
from alibabacloud_kms20160120 import models as kms
from alibabacloud_ram20150501 import models as ram

from ..findings import Finding, PreflightUnavailable
from ..key_accounts import key_account_findings

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

    from .clients import AlicloudClients

Check = Callable[[], list[Finding]]

DISK_ENCRYPTION_ROLE = "AliyunECSDiskEncryptDefaultRole"
ECS_SERVICE = "ecs.aliyuncs.com"
ROLE_MISSING = ("EntityNotExist.Role",)
# DescribeKey takes KeyId alone, so its 400 InvalidParameter is a KeyId no key can have (the shipped placeholder).
KEY_MISSING = ("Forbidden.KeyNotFound", "Forbidden.AliasNotFound", "InvalidParameter")
INSTANCE_MISSING = ("Forbidden.DKMSInstanceNotFound", "Forbidden.ResourceNotFound")
PAGE = 100  # DescribeImages and DescribeContactGroupList page size
CONTACTS_NONE = "ResourceNotFound"  # DescribeContactGroupList's HTTP 200 error code: the account has no contact group


def checks(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Check]:
    spec = cluster.spec
    found: list[Check] = [lambda: disk_encryption_role(clients)]
    if spec.storage.kms_key == "create":
        if spec.storage.dkms_instance_id:
            found.append(lambda: kms_instance(spec.storage.dkms_instance_id, clients))
    else:
        found.append(lambda: disk_key(spec.storage.kms_key, clients))
    if spec.identity.ram_role_name:
        found.append(lambda: node_role(spec.identity.ram_role_name, clients))
    # Each image a group boots (one per boot mode the groups need).
    booted = {e.id for group in cluster.groups if (e := cluster.group_image(group)) is not None and e.id}
    for image_id in sorted(booted):
        found.append(lambda image_id=image_id: pinned_image("image", image_id, f"image profile {spec.image}", clients))
    alarms = spec.monitoring.alarms
    if alarms is not None and cluster.alarm_target_mode == "bring":
        found.append(lambda: contact_group(alarms.target, clients))
    found.append(lambda: key_account_findings("alicloud", cluster, caller_account(clients),
                                              f"the ARN of RAM role {DISK_ENCRYPTION_ROLE}"))
    return found


def caller_account(clients: AlicloudClients) -> str | None:
    """The account the credentials act in: RAM GetRole reads the caller's own account, and a role's Arn is
    acs:ram::ACCOUNT:role/NAME; the disk encryption role every gpufleet cluster needs is the one read. None without
    it (disk_encryption_role reports that)."""
    body = clients.call("ram", "GetRole", ram.GetRoleRequest(role_name=DISK_ENCRYPTION_ROLE), missing=ROLE_MISSING)
    arn = str(((body or {}).get("Role") or {}).get("Arn") or "")
    parts = arn.split(":")
    return parts[3] if len(parts) > 4 and parts[:3] == ["acs", "ram", ""] and parts[3] else None


def disk_encryption_role(clients: AlicloudClients) -> list[Finding]:
    body = clients.call("ram", "GetRole", ram.GetRoleRequest(role_name=DISK_ENCRYPTION_ROLE), missing=ROLE_MISSING)
    if body is not None and body.get("Role"):
        return []
    return [Finding(
        "alicloud-account", "storage.kms_key", True,
        f"the account has no RAM role {DISK_ENCRYPTION_ROLE} (GetRole: EntityNotExist.Role): ECS cannot encrypt the "
        "node disks with a KMS key, so the first node launch fails",
        f"authorise it once per account: ECS console > Block Storage > disk encryption > Authorize, or RAM quick "
        f"authorisation of {DISK_ENCRYPTION_ROLE}",
    )]


def disk_key(key_id: str, clients: AlicloudClients) -> list[Finding]:
    body = clients.call("kms", "DescribeKey", kms.DescribeKeyRequest(key_id=key_id), missing=KEY_MISSING)
    field = "storage.kms_key"
    if body is None:
        return [Finding("alicloud-key", field, True,
                        f"KMS in {clients.region} has no key {key_id!r} visible to this account (DescribeKey)",
                        f"give the id of a KMS key in {clients.region}, or storage.kms_key: create with "
                        "storage.dkms_instance_id")]
    meta: dict[str, Any] = body.get("KeyMetadata", {})
    findings: list[Finding] = []
    if meta.get("KeyState") != "Enabled":
        findings.append(Finding("alicloud-key", field, True,
                                f"KMS key {key_id} is {meta.get('KeyState')}, not Enabled: disks cannot be encrypted "
                                "with it", "enable the key (or cancel its deletion), or give another key"))
    if meta.get("KeyUsage") not in (None, "ENCRYPT/DECRYPT"):
        findings.append(Finding("alicloud-key", field, True,
                                f"KMS key {key_id} is for {meta.get('KeyUsage')}, not ENCRYPT/DECRYPT",
                                "give a symmetric encryption key"))
    return findings


def kms_instance(instance_id: str, clients: AlicloudClients) -> list[Finding]:
    body = clients.call("kms", "GetKmsInstance", kms.GetKmsInstanceRequest(kms_instance_id=instance_id),
                        missing=INSTANCE_MISSING)
    field = "storage.dkms_instance_id"
    if body is None or not body.get("KmsInstance"):
        return [Finding("alicloud-key", field, True,
                        f"KMS in {clients.region} has no instance {instance_id} (GetKmsInstance)",
                        f"give the id of a KMS instance of {clients.region} (kst-...), or bring a key in "
                        "storage.kms_key")]
    status = body["KmsInstance"].get("Status")
    if status == "Connected":
        return []
    return [Finding("alicloud-key", field, status != "Connecting",
                    f"KMS instance {instance_id} is {status}, not Connected: the cluster's key is created in it",
                    "enable the instance (KMS console > Instances), or bring a key in storage.kms_key")]


def trusts_ecs(document: str) -> bool:
    """A RAM trust policy that lets ECS assume the role (Statement Allow sts:AssumeRole, Principal Service ecs)."""
    try:
        policy = json.loads(document)
    except (TypeError, ValueError):
        return False
    for statement in policy.get("Statement", []):
        actions = statement.get("Action", [])
        services = (statement.get("Principal") or {}).get("Service", [])
        actions = [actions] if isinstance(actions, str) else actions
        services = [services] if isinstance(services, str) else services
        if statement.get("Effect") == "Allow" and "sts:AssumeRole" in actions and ECS_SERVICE in services:
            return True
    return False


def node_role(role_name: str, clients: AlicloudClients) -> list[Finding]:
    body = clients.call("ram", "GetRole", ram.GetRoleRequest(role_name=role_name), missing=ROLE_MISSING)
    field = "identity.ram_role_name"
    if body is None or not body.get("Role"):
        return [Finding("alicloud-identity", field, True,
                        f"the account has no RAM role {role_name} (GetRole: EntityNotExist.Role)",
                        "give an existing role trusted by ecs.aliyuncs.com, or unset it to let gpufleet create one")]
    if not trusts_ecs(body["Role"].get("AssumeRolePolicyDocument", "")):
        return [Finding("alicloud-identity", field, True,
                        f"RAM role {role_name} does not let {ECS_SERVICE} assume it (its AssumeRolePolicyDocument): "
                        "nodes could not take it", f"add {ECS_SERVICE} to the role's trusted services")]
    return []


def pinned_image(field: str, image_id: str, what: str, clients: AlicloudClients) -> list[Finding]:
    body = clients.call("ecs", "DescribeImages", ecs.DescribeImagesRequest(
        region_id=clients.region, image_id=image_id, status="Available")) or {}
    if any(i.get("ImageId") == image_id for i in body.get("Images", {}).get("Image", [])):
        return []
    return [Finding("alicloud-image", field, True,
                    f"images/lock.yaml pins {image_id} for {what} in {clients.region}; DescribeImages finds no "
                    "Available image of that id this account may use",
                    "bake it again and `gpufleet images pin`, or share the image with this account")]


def newest_system_image(pattern: str, clients: AlicloudClients) -> str | None:
    """The newest Available system image of the region whose name fully matches `pattern`, as the image stack
    resolves its base image at bake time (ImageOwnerAlias system, x86_64, linux)."""
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        body = clients.call("ecs", "DescribeImages", ecs.DescribeImagesRequest(
            region_id=clients.region, image_owner_alias="system", architecture="x86_64", ostype="linux",
            page_size=PAGE, page_number=page)) or {}
        images = body.get("Images", {}).get("Image", [])
        found += [i for i in images if re.fullmatch(pattern, i.get("ImageId", "") or i.get("ImageName", ""))]
        if not images or page * PAGE >= int(body.get("TotalCount") or 0):
            break
        page += 1
    return max(found, key=lambda i: i.get("CreationTime", ""))["ImageId"] if found else None


def contact_group(name: str, clients: AlicloudClients) -> list[Finding]:
    names: list[str] = []
    page = 1
    while True:
        body = clients.call("cms", "DescribeContactGroupList", cms.DescribeContactGroupListRequest(
            page_number=page, page_size=PAGE)) or {}
        if body.get("Success") is False and body.get("Code") != CONTACTS_NONE:
            # CloudMonitor may refuse inside an HTTP 200 (Success false, Code, Message).
            raise PreflightUnavailable(f"cms DescribeContactGroupList refused: {body.get('Code')} "
                                       f"({body.get('Message')}); fix what it names and run preflight again")
        groups = body.get("ContactGroupList", {}).get("ContactGroup", [])
        names += [g.get("Name", "") for g in groups]
        if name in names or not groups or page * PAGE >= int(body.get("Total") or 0):
            break
        page += 1
    if name in names:
        return []
    return [Finding("alicloud-alarms", "monitoring.alarms.target", True,
                    f"CloudMonitor has no alarm contact group {name!r} ({len(names)} groups listed by "
                    "DescribeContactGroupList)",
                    "give an existing contact group's name, or target: create with emails")]
