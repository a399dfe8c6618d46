"""The metric seed signs in as azure-native does: the same settings (azure-native:* config first, then ARM_*
variables) pick the same method, and the credential runs through azure-identity's own client against recorded
Entra and Azure Monitor answers (tests/azure_replay.py): a service principal deploy the Pulumi way publishes with
that principal's token, where DefaultAzureCredential (AZURE_* variables only) found nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest
from azure.identity import (
    AzureCliCredential,
    CertificateCredential,
    ClientAssertionCredential,
    ClientSecretCredential,
    DefaultAzureCredential,
    ManagedIdentityCredential,
)
from azure_replay import Replay, fixture
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from test_azure_metric_seed import LISTED, PROPS, SCALE_SET, _token

from components.clouds.azure.metric_seed import MetricSeedProvider
from components.clouds.azure.provider_credential import (
    SETTINGS,
    CredentialSettingsError,
    provider_credential,
    provider_settings,
)
from gpufleet.clouds.azure.mock_answers import CLIENT

TENANT = "9c2e5f4a-1b3d-4e6f-8a7b-0c1d2e3f4a5b"
APP = "5d0b6c1e-7f2a-4b3c-9d4e-6a7b8c9d0e1f"
SUBSCRIPTION = "6f1c7e52-3d4b-4c1a-9a3e-0d2b8c5e7f10"
SERVICE_PRINCIPAL = {"clientId": APP, "clientSecret": "s3cret-value", "tenantId": TENANT,
                     "subscriptionId": SUBSCRIPTION}


@pytest.fixture(autouse=True)
def no_azure_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the machine running the tests: no ARM_* nor AZURE_* sign-in."""
    for variable in [*SETTINGS.values(), "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"]:
        monkeypatch.delenv(variable, raising=False)


def _replay() -> Replay:
    replay = Replay(writes=True)
    replay.add(fixture("entra-openid-configuration", tenant=TENANT))
    replay.add(fixture("entra-client-credentials-token", tenant=TENANT, access_token=_token(CLIENT)))
    replay.answer(f"POST {SCALE_SET}/metrics", {"status": 200, "body": {}})
    replay.answer(f"GET {SCALE_SET}/providers/Microsoft.Insights/metricDefinitions", {"status": 200, "body": LISTED})
    return replay


def _configured(replay: Replay, config: dict[str, Any]) -> MetricSeedProvider:
    """The provider as the dynamic provider host makes it: loaded, then configure() with the stack configuration."""
    provider = MetricSeedProvider(transport=replay, sleep=lambda _: None, clock=lambda: 0.0)
    provider.configure(ConfigureRequest(Config(config, "gpufleet")))
    return provider


def _token_requests(replay: Replay) -> list[dict[str, str]]:
    """The forms posted to Entra's token endpoint, one per audience (the monitoring API, then ARM)."""
    forms = []
    for request in (r for r in replay.sent if r.url.endswith(f"/{TENANT}/oauth2/v2.0/token")):
        body = request.body  # the form as azure-core holds it: a dict, or its encoded text
        if isinstance(body, (str, bytes)):
            text = body.decode() if isinstance(body, bytes) else body
            body = {key: values[0] for key, values in parse_qs(text).items()}
        forms.append(dict(body))
    return forms


def _assert_signed_in_as_the_service_principal(replay: Replay) -> None:
    forms = _token_requests(replay)
    assert {(f["grant_type"], f["client_id"], f["client_secret"]) for f in forms} == {
        ("client_credentials", APP, "s3cret-value")}
    assert {f["scope"].split()[0] for f in forms} == {"https://monitoring.azure.com/.default",
                                                      "https://management.azure.com/.default"}
    published = [r for r in replay.sent if r.method == "POST" and r.url.endswith("/metrics")]
    assert published and published[0].headers["Authorization"] == f"Bearer {_token(CLIENT)}"


def test_a_service_principal_in_the_providers_config_signs_the_seed_in() -> None:
    replay = _replay()
    provider = _configured(replay, {f"azure-native:{k}": v for k, v in SERVICE_PRINCIPAL.items()})
    provider.create(dict(PROPS))
    _assert_signed_in_as_the_service_principal(replay)


def test_a_service_principal_in_arm_variables_signs_the_seed_in(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SERVICE_PRINCIPAL.items():
        monkeypatch.setenv(SETTINGS[name], value)
    replay = _replay()
    _configured(replay, {}).create(dict(PROPS))
    _assert_signed_in_as_the_service_principal(replay)


def test_config_wins_over_the_environment_as_in_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARM_CLIENT_ID", "00000000-0000-4000-8000-000000000000")
    settings = provider_settings(Config({"azure-native:clientId": APP}, "gpufleet").get)
    assert settings == {"clientId": APP}


def test_a_method_missing_a_setting_fails_naming_it_before_any_request() -> None:
    replay = _replay()
    provider = _configured(replay, {"azure-native:clientId": APP, "azure-native:clientSecret": "s",
                                    "azure-native:subscriptionId": SUBSCRIPTION})
    with pytest.raises(CredentialSettingsError, match=r"needs azure-native:tenantId \(or ARM_TENANT_ID\)"):
        provider.create(dict(PROPS))
    assert replay.sent == []


@pytest.mark.parametrize(("settings", "kind"), [
    ({**SERVICE_PRINCIPAL, "useDefaultAzureCredential": "true"}, DefaultAzureCredential),
    ({**SERVICE_PRINCIPAL, "clientCertificatePath": "/certs/sp.pem"}, CertificateCredential),
    (SERVICE_PRINCIPAL, ClientSecretCredential),
    ({"clientId": APP, "tenantId": TENANT, "subscriptionId": SUBSCRIPTION, "useOidc": "true", "oidcToken": "jwt"},
     ClientAssertionCredential),
    ({"clientId": APP, "subscriptionId": SUBSCRIPTION, "useMsi": "true"}, ManagedIdentityCredential),
    ({"subscriptionId": SUBSCRIPTION}, AzureCliCredential),
])
def test_the_method_is_picked_in_the_providers_order(settings: dict[str, str], kind: type,
                                                     tmp_path: Any) -> None:
    if "clientCertificatePath" in settings:  # CertificateCredential reads the file when it is made
        settings = {**settings, "clientCertificatePath": str(_self_signed(tmp_path))}
    assert isinstance(provider_credential(settings), kind)


def test_another_cloud_is_refused_naming_the_setting() -> None:
    with pytest.raises(CredentialSettingsError, match="azure-native:environment"):
        provider_credential({**SERVICE_PRINCIPAL, "environment": "usgovernment"})


def _self_signed(directory: Any) -> Any:
    """A PEM private key and certificate, the shape CertificateCredential reads."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpufleet-test")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + timedelta(days=1))
            .sign(key, hashes.SHA256()))
    path = directory / "sp.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()) + cert.public_bytes(serialization.Encoding.PEM))
    return path
