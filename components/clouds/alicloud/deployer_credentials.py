"""The credentials a dynamic resource signs Alibaba Cloud calls with: the stack's alicloud provider's.

A dynamic provider runs in the `pulumi up` process on the deployer's machine, outside the alicloud provider plugin,
so it reads the same settings that provider does: alicloud:accessKey / alicloud:secretKey / alicloud:securityToken
or alicloud:profile from the stack's config (what ResourceProvider.configure receives), else the environment
variables that provider reads (aliyun/terraform-provider-alicloud alicloud/provider.go:35, :41, :47, :108), else the
official SDK's default credential chain. Where the provider's `assume_role` block is set (alicloud:assumeRole), the
helper assumes that role with those credentials as the provider does (provider.go:2279-2306: role_arn, session_name
else "terraform", policy, session_expiration else ALICLOUD_ASSUME_ROLE_SESSION_EXPIRATION else 3600, external_id;
the block's env fallbacks at :2864, :2870), so every call a dynamic resource makes runs as the role the provider's do.
"""

from __future__ import annotations

import json
from typing import Any

# Provider config key -> the environment variables terraform-provider-alicloud falls back to (provider.go above).
CREDENTIAL_KEYS = {
    "accessKey": ("ALICLOUD_ACCESS_KEY", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABACLOUD_ACCESS_KEY_ID"),
    "secretKey": ("ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABACLOUD_ACCESS_KEY_SECRET"),
    "securityToken": ("ALICLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABACLOUD_SECURITY_TOKEN"),
    "profile": ("ALICLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE"),
}


# The assume_role block's fields (Pulumi config names) -> the environment variables the provider falls back to.
ASSUME_ROLE_KEYS = {
    "roleArn": ("ALICLOUD_ASSUME_ROLE_ARN", "ALIBABA_CLOUD_ROLE_ARN"),
    "sessionName": ("ALICLOUD_ASSUME_ROLE_SESSION_NAME", "ALIBABA_CLOUD_ROLE_SESSION_NAME"),
    "sessionExpiration": ("ALICLOUD_ASSUME_ROLE_SESSION_EXPIRATION",),
    "policy": (),
    "externalId": (),
}
DEFAULT_SESSION_NAME, DEFAULT_SESSION_SECONDS = "terraform", 3600  # provider.go:2289-2299


class AssumeRoleSettingError(ValueError):
    """alicloud:assumeRole is not the object the provider takes."""


def _assume_role(config: Any, environ: dict[str, str]) -> dict[str, Any]:
    """The provider's assume_role block with its fallbacks filled in; empty when the stack sets none."""
    raw = config.get("alicloud:assumeRole")
    if not raw:
        return {}
    block = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(block, dict):
        raise AssumeRoleSettingError("alicloud:assumeRole must be an object (roleArn, sessionName, policy, ...)")
    found = {key: block.get(key) or next((environ[v] for v in variables if environ.get(v)), None)
             for key, variables in ASSUME_ROLE_KEYS.items()}
    if not found["roleArn"]:
        raise AssumeRoleSettingError("alicloud:assumeRole.roleArn is required (or ALICLOUD_ASSUME_ROLE_ARN)")
    found["sessionName"] = found["sessionName"] or DEFAULT_SESSION_NAME
    found["sessionExpiration"] = int(found["sessionExpiration"] or DEFAULT_SESSION_SECONDS)
    return {key: value for key, value in found.items() if value}


def provider_settings(config: Any, environ: dict[str, str]) -> dict[str, Any]:
    """The alicloud provider's credential settings: its stack config, else its environment variables; with the
    role to assume under `assumeRole` where the provider's block is set."""
    found: dict[str, Any] = {}
    for key, variables in CREDENTIAL_KEYS.items():
        value = config.get(f"alicloud:{key}") or next((environ[v] for v in variables if environ.get(v)), None)
        if value:
            found[key] = value
    role = _assume_role(config, environ)
    if role:
        found["assumeRole"] = role
    return found


def _base_provider(settings: dict[str, Any]) -> Any:
    """The credentials provider for the provider's keys, profile, or the default chain."""
    from alibabacloud_credentials.provider import StaticAKCredentialsProvider, StaticSTSCredentialsProvider
    from alibabacloud_credentials.provider.cli_profile import CLIProfileCredentialsProvider
    from alibabacloud_credentials.provider.default import DefaultCredentialsProvider

    if settings.get("accessKey") and settings.get("secretKey"):
        keys = {"access_key_id": settings["accessKey"], "access_key_secret": settings["secretKey"]}
        token = settings.get("securityToken")
        return StaticSTSCredentialsProvider(**keys, security_token=token) if token else StaticAKCredentialsProvider(
            **keys)
    if settings.get("profile"):
        return CLIProfileCredentialsProvider(profile_name=settings["profile"])
    return DefaultCredentialsProvider()


def credential(settings: dict[str, Any]) -> Any:
    """An alibabacloud_credentials client for the provider's settings (the default chain when none are set), as
    the assumed role where the settings name one."""
    from alibabacloud_credentials.client import Client
    from alibabacloud_credentials.provider.ram_role_arn import RamRoleArnCredentialsProvider

    base = _base_provider(settings)
    role = settings.get("assumeRole")
    if not role:
        return Client(provider=base)
    return Client(provider=RamRoleArnCredentialsProvider(
        credentials_provider=base, role_arn=role["roleArn"], role_session_name=role["sessionName"],
        duration_seconds=role["sessionExpiration"], policy=role.get("policy"), external_id=role.get("externalId"),
    ))
