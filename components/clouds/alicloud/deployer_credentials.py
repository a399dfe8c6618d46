"""The credentials a dynamic resource signs Alibaba Cloud calls with: the stack's alicloud provider's.

A dynamic provider runs in the `pulumi up` process on the deployer's machine, outside the alicloud provider plugin,
so it reads the same settings that provider does: alicloud:accessKey / alicloud:secretKey / alicloud:securityToken
or alicloud:profile from the stack's config (what ResourceProvider.configure receives), else the environment
variables that provider reads (aliyun/terraform-provider-alicloud alicloud/provider.go:35, :41, :47, :108), else the
official SDK's default credential chain. Where the provider's `assume_role` block is set (alicloud:assumeRole), the
helper assumes that role with those credentials as the provider does (provider.go:2279-2306: role_arn, session_name
else "terraform", policy, session_expiration else ALICLOUD_ASSUME_ROLE_SESSION_EXPIRATION else 3600, external_id;
the block's env fallbacks at :2864, :2870), so every call a dynamic resource makes runs as the role the provider's do.

The provider's `assume_role_with_oidc` block (alicloud:assumeRoleWithOidc: pulumi-alicloud 4.0.0 config/vars.py:47-48,
fields as config/outputs.py:157-233 names them) is read with its schema's environment fallbacks (provider.go
@81c43b6 :2893-2931: ALIBABA_CLOUD_OIDC_PROVIDER_ARN, _OIDC_TOKEN_FILE, _OIDC_TOKEN, _ROLE_ARN, _ROLE_SESSION_NAME)
and the same checks (:4321-4375: session name else "terraform"; a token or a token file required and not empty).
The provider exchanges it only when no AccessKey is set (connectivity/config.go:325-326) and before assume_role
(:460-468), whose role it then assumes with the OIDC session's keys (:259-260). Here the SDK's own
OIDCRoleArnCredentialsProvider makes the AssumeRoleWithOIDC call; it reads the token from a file each time it
refreshes, so an inline token is written to a private file first.

Both exchanges go where the provider's go: the `sts` of its `endpoints` block (alicloud:endpoints, provider.go:2353),
else the region's STS, sts.<region>.aliyuncs.com (:2487-2488, connectivity/endpoint.go:125-130; config.go:276-277
and :338-339 hand it to both credentials), never the SDK's default global sts.aliyuncs.com, which a network that
reaches only regional or VPC endpoints does not reach. The block's other endpoints (ess, cms, slb) are the ones the
dynamic resources call (`service_endpoint`).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import tempfile
from pathlib import Path
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
REGION_VARIABLES = ("ALICLOUD_REGION", "ALIBABA_CLOUD_REGION")  # provider.go:56-59
DEFAULT_SESSION_NAME, DEFAULT_SESSION_SECONDS = "terraform", 3600  # provider.go:2289-2299


# The assume_role_with_oidc block's fields -> its schema's environment fallbacks (provider.go:2893-2931).
OIDC_KEYS = {
    "oidcProviderArn": ("ALIBABA_CLOUD_OIDC_PROVIDER_ARN",),
    "oidcTokenFile": ("ALIBABA_CLOUD_OIDC_TOKEN_FILE",),
    "oidcToken": ("ALIBABA_CLOUD_OIDC_TOKEN",),
    "roleArn": ("ALIBABA_CLOUD_ROLE_ARN",),
    "roleSessionName": ("ALIBABA_CLOUD_ROLE_SESSION_NAME",),
    "policy": (),
    "sessionExpiration": (),
}
# STS DurationSeconds: 900 up to the role's MaxSessionDuration, 3600 when not sent (API reference AssumeRoleWithOIDC;
# the provider sends none unless set, config.go:384-386).
MIN_SESSION_SECONDS = 900
OIDC_TOKEN_CHARS = (4, 20000)  # provider.go:2916 StringLenBetween(4, 20000), as the API reference says


class AssumeRoleSettingError(ValueError):
    """alicloud:assumeRole, alicloud:assumeRoleWithOidc or alicloud:endpoints is not what the provider takes."""


def _setting(config: Any, key: str) -> Any:
    """The structured setting `alicloud:<key>`, parsed where the engine hands it over as JSON text; None when unset."""
    raw = config.get(f"alicloud:{key}")
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw else None
    except ValueError as error:
        raise AssumeRoleSettingError(
            f"alicloud:{key} is not the structured value the provider takes ({error})") from None


def _block(config: Any, key: str, environ: dict[str, str], fields: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """The provider's block under `alicloud:<key>` with its environment fallbacks; empty when the stack sets none."""
    block = _setting(config, key)
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise AssumeRoleSettingError(f"alicloud:{key} must be an object ({', '.join(fields)})")
    return {field: block.get(field) or next((environ[v] for v in variables if environ.get(v)), None)
            for field, variables in fields.items()}


def _assume_role(config: Any, environ: dict[str, str]) -> dict[str, Any]:
    """The provider's assume_role block with its fallbacks filled in; empty when the stack sets none."""
    found = _block(config, "assumeRole", environ, ASSUME_ROLE_KEYS)
    if not found:
        return {}
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
    oidc = _assume_role_with_oidc(config, environ)
    if oidc:
        found["assumeRoleWithOidc"] = oidc
    endpoints = _endpoints(config)
    if endpoints:
        found["endpoints"] = endpoints
    region = config.get("alicloud:region") or next((environ[v] for v in REGION_VARIABLES if environ.get(v)), None)
    sts = endpoints.get("sts") or (f"sts.{region}.aliyuncs.com" if region else None)
    if sts:
        found["stsEndpoint"] = sts
    return found


def _endpoints(config: Any) -> dict[str, str]:
    """The provider's endpoints block (alicloud:endpoints: a list of objects of product -> endpoint, as the provider's
    set takes it, provider.go:2321-2353), its non-empty entries; empty when the stack sets none."""
    blocks = _setting(config, "endpoints")
    if not blocks:
        return {}
    if isinstance(blocks, dict):
        blocks = [blocks]
    if not isinstance(blocks, list) or not all(isinstance(block, dict) for block in blocks):
        raise AssumeRoleSettingError("alicloud:endpoints must be a list of objects of product to endpoint "
                                     "(e.g. [{\"sts\": \"sts-vpc.cn-hangzhou.aliyuncs.com\"}])")
    return {product: endpoint.strip() for block in blocks for product, endpoint in block.items()
            if isinstance(endpoint, str) and endpoint.strip()}


def service_endpoint(settings: dict[str, Any], product: str) -> str | None:
    """The provider's endpoint for `product` (ess, cms, slb) where its endpoints block names one; None: the SDK's
    endpoint for the region, as the provider's own default."""
    return settings.get("endpoints", {}).get(product)


def _assume_role_with_oidc(config: Any, environ: dict[str, str]) -> dict[str, Any]:
    """The provider's assume_role_with_oidc block, its fallbacks filled in and checked as the provider checks it;
    empty when the stack sets none."""
    found = _block(config, "assumeRoleWithOidc", environ, OIDC_KEYS)
    if not found:
        return {}
    for field in ("oidcProviderArn", "roleArn"):
        if not found[field]:
            raise AssumeRoleSettingError(f"alicloud:assumeRoleWithOidc.{field} is required "
                                         f"(or {OIDC_KEYS[field][0]})")
    if not found["oidcToken"] and not found["oidcTokenFile"]:
        raise AssumeRoleSettingError("alicloud:assumeRoleWithOidc: one of oidcToken, oidcTokenFile must be specified "
                                     "(or ALIBABA_CLOUD_OIDC_TOKEN, ALIBABA_CLOUD_OIDC_TOKEN_FILE)")
    token = found["oidcToken"]
    if token and not OIDC_TOKEN_CHARS[0] <= len(token) <= OIDC_TOKEN_CHARS[1]:
        raise AssumeRoleSettingError(f"alicloud:assumeRoleWithOidc.oidcToken must be {OIDC_TOKEN_CHARS[0]}-"
                                     f"{OIDC_TOKEN_CHARS[1]} characters, got {len(token)}")
    seconds = int(found["sessionExpiration"] or DEFAULT_SESSION_SECONDS)
    if seconds < MIN_SESSION_SECONDS:
        raise AssumeRoleSettingError(f"alicloud:assumeRoleWithOidc.sessionExpiration must be at least "
                                     f"{MIN_SESSION_SECONDS} seconds, got {seconds}")
    found["roleSessionName"] = found["roleSessionName"] or DEFAULT_SESSION_NAME
    found["sessionExpiration"] = seconds
    return {key: value for key, value in found.items() if value}


def oidc_token_file(oidc: dict[str, Any]) -> str:
    """The file the SDK reads the token from: the block's token written to a private file (the provider prefers the
    token to the file, provider.go:4352-4360), else the block's file."""
    return _written(oidc["oidcToken"]) if oidc.get("oidcToken") else str(oidc["oidcTokenFile"])


@functools.cache
def _written(token: str) -> str:
    """A private file holding `token`, one per token for the process (every call signs anew), removed at exit."""
    folder = tempfile.mkdtemp(prefix="gpufleet-oidc-")  # mode 0700: only this user reads the token
    path = Path(folder) / "token"
    path.write_text(token, encoding="utf-8")
    os.chmod(path, 0o600)
    atexit.register(lambda: (path.unlink(missing_ok=True), Path(folder).rmdir()))
    return str(path)


def _base_provider(settings: dict[str, Any]) -> Any:
    """The credentials provider for the provider's keys, profile, OIDC role (only without keys, as the provider:
    config.go:326), or the default chain."""
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
    oidc = settings.get("assumeRoleWithOidc")
    if oidc:
        from alibabacloud_credentials.provider.oidc import OIDCRoleArnCredentialsProvider

        return OIDCRoleArnCredentialsProvider(
            role_arn=oidc["roleArn"], oidc_provider_arn=oidc["oidcProviderArn"],
            oidc_token_file_path=oidc_token_file(oidc), role_session_name=oidc["roleSessionName"],
            duration_seconds=oidc["sessionExpiration"],
            policy=oidc.get("policy"), sts_endpoint=settings.get("stsEndpoint"))
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
        sts_endpoint=settings.get("stsEndpoint"),
    ))
