"""The Azure SDK clients preflight reads through: read-only, with bounded retries and timeouts, and every SDK error
turned into a finding's input or PreflightUnavailable with the call and the fix named.

Each client gets its own policy list, the SDK's default less ARMAutoResourceProviderRegistrationPolicy
(azure-mgmt-core): on a 409 MissingSubscriptionRegistration that policy POSTs a provider registration, a write, and
preflight never writes. What is unregistered becomes a finding instead (account.py).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.core.pipeline import policies
from azure.mgmt.core.policies import ARMChallengeAuthenticationPolicy, ARMHttpLoggingPolicy

from ..findings import PreflightUnavailable

T = TypeVar("T")

# Azure public cloud's Resource Manager and its token audience (azure.mgmt.core.tools.get_arm_endpoints).
ARM_SCOPE = "https://management.azure.com/.default"
# A few retries, backing off 0.5, 1, 2 s (azure-core RetryPolicy, exponential; a 429's Retry-After wins over the
# backoff), each try bounded by the connect and read timeouts, the whole call by CALL_TIMEOUT: seconds, not minutes.
RETRIES = 3
BACKOFF_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8
CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 30
CALL_TIMEOUT_SECONDS = 90
CREDENTIAL_SOURCE = (
    "DefaultAzureCredential: AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, workload or managed identity, "
    "then the Azure CLI login"
)
SIGN_IN = "`az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET"


@dataclass(frozen=True)
class AzureClients:
    """The SDK clients of one subscription (the one the stack deploys into)."""

    subscription_id: str
    compute: Any
    """azure.mgmt.compute.ComputeManagementClient"""
    network: Any
    """azure.mgmt.network.NetworkManagementClient"""
    resources: Any
    """azure.mgmt.resource.resources.ResourceManagementClient"""
    features: Any
    """azure.mgmt.resource.features.FeatureClient"""
    containers: Any
    """azure.mgmt.containerservice.ContainerServiceClient"""
    credential_source: str = CREDENTIAL_SOURCE


def read_only_policies(credential: Any, backoff: float = BACKOFF_SECONDS) -> list[Any]:
    """The generated clients' own policy order (e.g. azure.mgmt.compute._client), without provider auto-registration."""
    return [
        policies.RequestIdPolicy(),
        policies.HeadersPolicy(),
        policies.UserAgentPolicy(sdk_moniker="gpufleet-preflight"),
        policies.ProxyPolicy(),
        policies.ContentDecodePolicy(),
        policies.RedirectPolicy(),
        policies.RetryPolicy(
            retry_total=RETRIES, retry_connect=RETRIES, retry_read=RETRIES, retry_status=RETRIES,
            retry_backoff_factor=backoff, retry_backoff_max=BACKOFF_MAX_SECONDS, timeout=CALL_TIMEOUT_SECONDS,
        ),
        ARMChallengeAuthenticationPolicy(credential, ARM_SCOPE),
        policies.CustomHookPolicy(),
        policies.NetworkTraceLoggingPolicy(),
        policies.DistributedTracingPolicy(),
        policies.SensitiveHeaderCleanupPolicy(),
        ARMHttpLoggingPolicy(),
    ]


def make_clients(
    subscription_id: str,
    credential: Any,
    transport_factory: Callable[[], Any] | None = None,
    backoff: float = BACKOFF_SECONDS,
    credential_source: str = CREDENTIAL_SOURCE,
) -> AzureClients:
    """The clients over `credential`; transport_factory gives each its transport (tests replay answers)."""
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.containerservice import ContainerServiceClient
    from azure.mgmt.network import NetworkManagementClient
    from azure.mgmt.resource.features import FeatureClient
    from azure.mgmt.resource.resources import ResourceManagementClient

    def transport() -> Any:
        if transport_factory is not None:
            return transport_factory()
        from azure.core.pipeline.transport import RequestsTransport

        return RequestsTransport(connection_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS)

    def build(kind: Any) -> Any:
        return kind(credential, subscription_id, policies=read_only_policies(credential, backoff),
                    transport=transport())

    return AzureClients(
        subscription_id=subscription_id,
        compute=build(ComputeManagementClient),
        network=build(NetworkManagementClient),
        resources=build(ResourceManagementClient),
        features=build(FeatureClient),
        containers=build(ContainerServiceClient),
        credential_source=credential_source,
    )


def default_subscription(environ: dict[str, str] | None = None) -> str:
    """The subscription the Azure tools would deploy into: AZURE_SUBSCRIPTION_ID, ARM_SUBSCRIPTION_ID (what the Pulumi
    azure-native provider reads), else the Azure CLI's default subscription (azureProfile.json, isDefault)."""
    env = os.environ if environ is None else environ
    for key in ("AZURE_SUBSCRIPTION_ID", "ARM_SUBSCRIPTION_ID"):
        if env.get(key):
            return env[key]
    profile = Path(env.get("AZURE_CONFIG_DIR") or Path.home() / ".azure") / "azureProfile.json"
    try:
        # The Azure CLI writes this file with a byte-order mark.
        subscriptions = json.loads(profile.read_text(encoding="utf-8-sig")).get("subscriptions", [])
    except (OSError, ValueError, AttributeError):
        subscriptions = []
    for subscription in subscriptions:
        if isinstance(subscription, dict) and subscription.get("isDefault") and subscription.get("id"):
            return str(subscription["id"])
    raise PreflightUnavailable(
        "no Azure subscription to check: set AZURE_SUBSCRIPTION_ID (or ARM_SUBSCRIPTION_ID) to the subscription the "
        "stack deploys into, or pick one with `az account set --subscription ID` after `az login`"
    )


def default_clients() -> AzureClients:
    """Clients from the user's usual credential chain (DefaultAzureCredential) for their default subscription."""
    from azure.identity import DefaultAzureCredential

    # The chain logs each credential it could not use as a warning; ask() reports the failure once, with the fix.
    logging.getLogger("azure.identity").setLevel(logging.ERROR)
    return make_clients(default_subscription(), DefaultAzureCredential())


def _reason(error: HttpResponseError) -> str:
    code = getattr(error.error, "code", None) if error.error is not None else None
    message = (getattr(error.error, "message", None) if error.error is not None else None) or error.message or ""
    first = str(message).strip().splitlines()[0] if str(message).strip() else ""
    return f"{code}: {first}" if code else first or f"HTTP {error.status_code}"


def ask(clients: AzureClients, what: str, call: Callable[[], T]) -> T:
    """The answer of one read-only call (a list is consumed here, so its pages fail here too); an error the user fixes
    outside the stack (credential, access, throttling, network) stops preflight with the call named."""
    try:
        return call()
    except ClientAuthenticationError as error:  # a credential the chain could not use, or ARM's 401
        raise PreflightUnavailable(
            f"Azure refused the credential while reading {what} ({_first_line(error)}); credential source: "
            f"{clients.credential_source}. Sign in again ({SIGN_IN}), then run preflight again"
        ) from None
    except HttpResponseError as error:
        status = error.status_code
        if status == 429:
            raise PreflightUnavailable(
                f"Azure Resource Manager throttled {what} (HTTP 429) through {RETRIES} retries; wait a minute and run "
                "preflight again"
            ) from None
        if status == 403:
            raise PreflightUnavailable(
                f"access denied reading {what} ({_reason(error)}) in subscription {clients.subscription_id}: give the "
                "signed-in identity Reader on the subscription (and on brought resources elsewhere)"
            ) from None
        hint = "; check the stack's region and the ids it names" if status in (400, 404) else ""
        raise PreflightUnavailable(f"Azure answered HTTP {status} reading {what} ({_reason(error)}){hint}") from None
    except (ServiceRequestError, ServiceResponseError) as error:
        raise PreflightUnavailable(
            f"no answer from Azure Resource Manager reading {what} ({_first_line(error)}) within "
            f"{READ_TIMEOUT_SECONDS} s, after {RETRIES} retries; check the network (proxy, firewall) and run again"
        ) from None


def ask_or_missing(clients: AzureClients, what: str, call: Callable[[], T]) -> T | None:
    """As ask, with None where Azure says the resource does not exist (404: not found, or its group is gone)."""
    def answer() -> T | None:
        try:
            return call()
        except ResourceNotFoundError:
            return None

    return ask(clients, what, answer)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class Memo:
    """One answer per key, fetched once even when checks on several threads ask for it together."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Any, _Once] = {}

    def get(self, key: Any, fetch: Callable[[], T]) -> T:
        with self._lock:
            entry = self._entries.setdefault(key, _Once(fetch))
        return entry.value()  # type: ignore[no-any-return]


class _Once:
    def __init__(self, fetch: Callable[[], Any]) -> None:
        self._fetch, self._lock = fetch, threading.Lock()
        self._result: tuple[bool, Any] | None = None

    def value(self) -> Any:
        with self._lock:
            if self._result is None:
                try:
                    self._result = (True, self._fetch())
                except Exception as error:  # every waiter sees the same failure
                    self._result = (False, error)
        ok, value = self._result
        if ok:
            return value
        raise value
