"""The credentials a dynamic resource signs Alibaba Cloud calls with: the stack's alicloud provider's.

A dynamic provider runs in the `pulumi up` process on the deployer's machine, outside the alicloud provider plugin,
so it reads the same settings that provider does: alicloud:accessKey / alicloud:secretKey / alicloud:securityToken
or alicloud:profile from the stack's config (what ResourceProvider.configure receives), else the environment
variables that provider reads (aliyun/terraform-provider-alicloud alicloud/provider.go:35, :41, :47, :108), else the
official SDK's default credential chain.
"""

from __future__ import annotations

from typing import Any

# Provider config key -> the environment variables terraform-provider-alicloud falls back to (provider.go above).
CREDENTIAL_KEYS = {
    "accessKey": ("ALICLOUD_ACCESS_KEY", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABACLOUD_ACCESS_KEY_ID"),
    "secretKey": ("ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABACLOUD_ACCESS_KEY_SECRET"),
    "securityToken": ("ALICLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABACLOUD_SECURITY_TOKEN"),
    "profile": ("ALICLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE"),
}


def provider_settings(config: Any, environ: dict[str, str]) -> dict[str, str]:
    """The alicloud provider's credential settings: its stack config, else its environment variables."""
    found = {}
    for key, variables in CREDENTIAL_KEYS.items():
        value = config.get(f"alicloud:{key}") or next((environ[v] for v in variables if environ.get(v)), None)
        if value:
            found[key] = value
    return found


def credential(settings: dict[str, str]) -> Any:
    """An alibabacloud_credentials client for the provider's settings (the default chain when none are set)."""
    from alibabacloud_credentials.client import Client
    from alibabacloud_credentials.models import Config
    from alibabacloud_credentials.provider.cli_profile import CLIProfileCredentialsProvider

    if settings.get("accessKey") and settings.get("secretKey"):
        token = settings.get("securityToken")
        return Client(Config(type="sts" if token else "access_key", access_key_id=settings["accessKey"],
                             access_key_secret=settings["secretKey"], security_token=token))
    if settings.get("profile"):
        return Client(provider=CLIProfileCredentialsProvider(profile_name=settings["profile"]))
    return Client()
