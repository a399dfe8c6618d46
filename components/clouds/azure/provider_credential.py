"""The azure-identity credential azure-native itself would sign in with, from the same settings: what a dynamic
resource of the Azure components (the metric seed) calls Azure with, so a deploy the Pulumi way (a service
principal in ARM_* variables or azure-native:* config, OIDC in CI, a managed identity) works there too.

pulumi/pulumi-azure-native provider/pkg/provider/auth_azidentity.go: readAuthConfig reads each setting from the
`azure-native:<name>` config key, else its environment variable (provider.go getConfig: config first), and
newSingleMethodAuthCredential picks ONE method in this order, failing (never falling through) when the picked one
lacks a required setting: useDefaultAzureCredential; clientCertificatePath; clientSecret; useOidc (a token, a token
file, or GitHub's token exchange); useMsi (with clientId as the user-assigned identity); else the Azure CLI.
DefaultAzureCredential reads AZURE_* variables, not ARM_*, so it is used only where the provider uses it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

# (azure-native config name, environment variable), as readAuthConfig reads them.
SETTINGS = {
    "clientId": "ARM_CLIENT_ID",
    "tenantId": "ARM_TENANT_ID",
    "subscriptionId": "ARM_SUBSCRIPTION_ID",
    "clientSecret": "ARM_CLIENT_SECRET",
    "clientCertificatePath": "ARM_CLIENT_CERTIFICATE_PATH",
    "clientCertificatePassword": "ARM_CLIENT_CERTIFICATE_PASSWORD",
    "useMsi": "ARM_USE_MSI",
    "useOidc": "ARM_USE_OIDC",
    "oidcAudience": "ARM_OIDC_AUDIENCE",
    "oidcToken": "ARM_OIDC_TOKEN",
    "oidcTokenFilePath": "ARM_OIDC_TOKEN_FILE_PATH",
    "oidcRequestToken": "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "oidcRequestUrl": "ACTIONS_ID_TOKEN_REQUEST_URL",
    "useDefaultAzureCredential": "ARM_USE_DEFAULT_AZURE_CREDENTIAL",
    "environment": "ARM_ENVIRONMENT",
}
PUBLIC_CLOUD = ("", "public")  # the seed calls the public cloud's endpoints (monitoring.azure.com)
GITHUB_AUDIENCE = "api://AzureADTokenExchange"  # the provider's default oidcAudience for GitHub's exchange


class CredentialSettingsError(RuntimeError):
    """The sign-in method the provider's settings pick lacks a setting it needs."""


def provider_settings(config: Callable[[str], Any], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each setting as azure-native reads it: its `azure-native:` config value (`config` answers a full key, as the
    stack configuration a dynamic provider's configure() receives does), else its environment variable."""
    environ = os.environ if environ is None else environ
    settings = {}
    for name, variable in SETTINGS.items():
        value = config(f"azure-native:{name}")
        value = environ.get(variable, "") if value is None else str(value)
        if value:
            settings[name] = value
    return settings


def _required(settings: Mapping[str, str], method: str, *names: str) -> list[str]:
    missing = [name for name in names if not settings.get(name)]
    if missing:
        wanted = ", ".join(f"azure-native:{n} (or {SETTINGS[n]})" for n in missing)
        raise CredentialSettingsError(f"authenticating {method} (as azure-native would) needs {wanted}")
    return [settings[name] for name in names]


def _github_assertion(settings: Mapping[str, str]) -> Callable[[], str]:
    """GitHub's OIDC token exchange (getOidcTokenExchangeAssertion): the request URL with the audience, the request
    token as a bearer; the answer's `value` is the assertion."""
    def assertion() -> str:
        import requests

        response = requests.get(
            settings["oidcRequestUrl"], params={"audience": settings.get("oidcAudience", GITHUB_AUDIENCE)},
            headers={"Authorization": f"Bearer {settings['oidcRequestToken']}", "Accept": "application/json"},
            timeout=30,
        )
        response.raise_for_status()
        return str(response.json()["value"])

    return assertion


def _oidc(settings: Mapping[str, str], options: dict[str, Any]) -> Any:
    from azure.identity import ClientAssertionCredential

    tenant, client, _ = _required(settings, "with OIDC", "tenantId", "clientId", "subscriptionId")
    if token := settings.get("oidcToken"):
        return ClientAssertionCredential(tenant, client, lambda: token, **options)
    if path := settings.get("oidcTokenFilePath"):
        with open(path, encoding="utf-8") as handle:
            token_from_file = handle.read()
        return ClientAssertionCredential(tenant, client, lambda: token_from_file, **options)
    if settings.get("oidcRequestUrl") and settings.get("oidcRequestToken"):
        return ClientAssertionCredential(tenant, client, _github_assertion(settings), **options)
    raise CredentialSettingsError("authenticating with OIDC (as azure-native would) needs azure-native:oidcToken, "
                                  "oidcTokenFilePath, or oidcRequestUrl with oidcRequestToken")


def provider_credential(settings: Mapping[str, str], **options: Any) -> Any:
    """The credential azure-native's settings pick (`options`, e.g. a transport, go to it)."""
    from azure import identity

    if settings.get("environment", "").lower() not in PUBLIC_CLOUD:
        raise CredentialSettingsError(
            f"azure-native:environment (ARM_ENVIRONMENT) is {settings['environment']!r}: the metric seed calls the "
            "public cloud's endpoints only")
    if settings.get("useDefaultAzureCredential") == "true":
        _required(settings, "with the Default Azure Credential", "subscriptionId")
        return identity.DefaultAzureCredential(**options)
    if path := settings.get("clientCertificatePath"):
        tenant, client, _ = _required(settings, "as a service principal with a client certificate", "tenantId",
                                      "clientId", "subscriptionId")
        return identity.CertificateCredential(tenant, client, certificate_path=path,
                                              password=settings.get("clientCertificatePassword"), **options)
    if secret := settings.get("clientSecret"):
        tenant, client, _ = _required(settings, "as a service principal with a client secret", "tenantId",
                                      "clientId", "subscriptionId")
        return identity.ClientSecretCredential(tenant, client, secret, **options)
    if settings.get("useOidc") == "true":
        return _oidc(settings, options)
    if settings.get("useMsi") == "true":
        _required(settings, "as a managed identity", "subscriptionId")
        return identity.ManagedIdentityCredential(client_id=settings.get("clientId"), **options)
    return identity.AzureCliCredential(tenant_id=settings.get("tenantId", ""),
                                       subscription=settings.get("subscriptionId"))
