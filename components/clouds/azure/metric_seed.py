"""The idle rule's metric, seeded before the autoscale setting that reads it.

Autoscale validates at create that a rule's custom metric exists on the resource (MicrosoftDocs/azure-docs#16061:
"for custom metrics ... we are validating the metric metadata does exist"; metric alerts have
skipMetricValidation, autoscale rules document no such flag), and a fresh scale set has never published
`gpu_utilization`. So the deploy publishes one data point itself, with the deployer's credentials, through Azure
Monitor's custom metrics REST API (learn.microsoft.com/azure/azure-monitor/essentials/metrics-store-custom-rest-api:
POST https://<region>.monitoring.azure.com/<resource id>/metrics, a token for https://monitoring.azure.com/,
Monitoring Metrics Publisher on the resource), then waits until the scale set's metric definitions list it
(Metric Definitions - List, api-version 2018-01-01). The value is 100 %: the idle rule scales in below its
threshold, so the seed can never trigger a scale-in.

Chain: the deployer's Monitoring Metrics Publisher on the scale set -> the RBAC propagation wait -> MetricSeed ->
the autoscale setting.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pulumi
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, Resource, ResourceProvider
from pulumi_azure_native import authorization

from ..seed_wait import await_listed
from .identity import MONITORING_METRICS_PUBLISHER
from .provider_credential import provider_credential, provider_settings
from .storage import propagated, role_definition_id

MONITORING_SCOPE = "https://monitoring.azure.com/.default"  # the custom metrics API's audience
ARM_SCOPE = "https://management.azure.com/.default"
ARM = "https://management.azure.com"
DEFINITIONS_API = "2018-01-01"
SEED_VALUE = 100  # percent: at or above any idle threshold (spec: gpu_util_below < 100)
SEED_DIMENSION_VALUE = "gpufleet-deploy-seed"  # the Instance dimension's value; nodes publish their host names
# How long the metric may take to be listed. Microsoft documents no bound for a new custom metric's definition to
# appear; 15 minutes, polled each 30 s, then the deploy stops with the reason (unconfirmed: measure on a first deploy).
SEED_TIMEOUT_SECONDS = 900
SEED_POLL_SECONDS = 30
# `pulumi-python:dynamic/azure:MetricSeed`: the offline engine answers it through the Azure backend.
SEED_TYPE = "pulumi-python:dynamic/azure:MetricSeed"


class SeedTimeout(RuntimeError):
    """The published metric was not listed within the bounded wait."""


def seed_id(props: dict[str, Any]) -> str:
    """The seed's id: the metric it made exist, under its scale set (what create returns; the mocks answer it)."""
    return f"{props['scale_set_id']}/metricDefinitions/{props['namespace']}/{props['metric']}"


def _token_object_id(token: str) -> str | None:
    """The `oid` claim of an Entra access token (read, not verified: Azure verifies it; this names who we are)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    return claims.get("oid")


class MetricSeedProvider(ResourceProvider):
    """Publishes one data point and waits for the metric's definition, signed in as azure-native is (the same
    settings: provider_credential.py), read from the stack configuration the dynamic provider host hands
    configure() and the environment. `transport`, `credential`, `sleep` and `clock` are for tests (an azure-core
    transport with recorded responses); a deploy uses requests."""

    def __init__(self, transport: Any = None, credential: Any = None,
                 sleep: Callable[[float], None] | None = None, clock: Callable[[], float] | None = None) -> None:
        super().__init__()
        self.transport, self.credential, self.sleep, self.clock = transport, credential, sleep, clock
        self.settings: dict[str, str] | None = None

    def configure(self, req: ConfigureRequest) -> None:
        # The host calls this once, after loading the provider, with the stack's configuration (secrets unwrapped):
        # the settings stay in the host's memory, never in the resource's state.
        self.settings = provider_settings(req.config.get)

    def _client(self, base_url: str, scope: str) -> Any:
        from azure.core import PipelineClient
        from azure.core.pipeline.policies import BearerTokenCredentialPolicy, RetryPolicy

        return PipelineClient(
            base_url, transport=self.transport,
            policies=[RetryPolicy(), BearerTokenCredentialPolicy(self._credential(), scope)],
        )

    def _credential(self) -> Any:
        if self.credential is None:
            settings = self.settings if self.settings is not None else provider_settings(lambda _: None)
            transport = {"transport": self.transport} if self.transport is not None else {}
            self.credential = provider_credential(settings, **transport)
        return self.credential

    def _check_principal(self, props: dict[str, Any]) -> None:
        """The role went to the provider's principal (getClientConfig); these credentials must be that principal."""
        oid = _token_object_id(self._credential().get_token(MONITORING_SCOPE).token)
        if oid is not None and oid != props["principal_id"]:
            raise RuntimeError(
                f"the credentials the seed signed in with (azure-native's settings, object id {oid}) are not the "
                f"deployer's ({props['principal_id']}, which holds Monitoring Metrics Publisher on the scale set): "
                "the seed reads the same azure-native:* config and ARM_* variables as the provider"
            )

    def _publish(self, props: dict[str, Any]) -> None:
        from azure.core.rest import HttpRequest

        body = {
            "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "data": {"baseData": {
                "metric": props["metric"], "namespace": props["namespace"], "dimNames": ["Instance"],
                "series": [{"dimValues": [SEED_DIMENSION_VALUE], "min": SEED_VALUE, "max": SEED_VALUE,
                            "sum": SEED_VALUE, "count": 1}],
            }},
        }
        base = f"https://{props['region']}.monitoring.azure.com"
        with self._client(base, MONITORING_SCOPE) as client:
            response = client.send_request(HttpRequest("POST", f"{base}{props['scale_set_id']}/metrics", json=body))
            response.raise_for_status()

    def _listed(self, client: Any, props: dict[str, Any]) -> bool:
        from azure.core.rest import HttpRequest

        url = f"{ARM}{props['scale_set_id']}/providers/Microsoft.Insights/metricDefinitions"
        params = {"api-version": DEFINITIONS_API, "metricnamespace": props["namespace"]}
        request = HttpRequest("GET", url, params=params)
        response = client.send_request(request)
        response.raise_for_status()
        return any((d.get("name") or {}).get("value") == props["metric"] for d in response.json().get("value", []))

    def _await_definition(self, props: dict[str, Any]) -> None:
        with self._client(ARM, ARM_SCOPE) as client:
            await_listed(
                lambda: self._listed(client, props), float(props["timeout_seconds"]), float(props["poll_seconds"]),
                lambda: SeedTimeout(
                    f"{props['metric']} was published to {props['scale_set_id']} but its metric definitions did "
                    f"not list it within {props['timeout_seconds']} s; autoscale would refuse the idle rule. "
                    "Run `pulumi up` again: the seed is retried and the data point stays for 93 days"),
                sleep=self.sleep, clock=self.clock,
            )

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._check_principal(props)
        self._publish(props)
        self._await_definition(props)
        return CreateResult(id_=seed_id(props), outs=dict(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # A new scale set (or metric) needs a new seed; the bounds of the wait change nothing already seeded.
        keys = [k for k in ("scale_set_id", "metric", "namespace", "region") if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(keys), replaces=keys, delete_before_replace=False)

    # delete: nothing to undo (a custom metric cannot be deleted; its data expires), so the default no-op stays.


class MetricSeed(Resource, module="azure", name="MetricSeed"):
    """One published data point of a custom metric and its listed definition (see the module's docstring)."""

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(MetricSeedProvider(), name, props, opts)


def seed_metric(
    name: str, scale_set_id: pulumi.Input[str], metric: str, namespace: str, region: str,
    deployer: tuple[pulumi.Input[str], str], subscription_id: pulumi.Input[str], opts: pulumi.ResourceOptions,
) -> MetricSeed:
    """The deployer's (object id, principal type) publisher role on the scale set, its propagation wait, then the
    seed (what the autoscale setting depends on)."""
    grant = authorization.RoleAssignment(
        f"{name}-seed-publisher",
        scope=scale_set_id,
        # Object id and principal type (identity.deployer_principal_type): azure-native sends "User" when unset,
        # and Azure refuses a service principal assigned as a user.
        principal_id=deployer[0],
        principal_type=deployer[1],
        role_definition_id=role_definition_id(subscription_id, MONITORING_METRICS_PUBLISHER),
        description="the deployer seeds the idle rule's custom metric before autoscale validates it",
        opts=opts,
    )
    wait = propagated(f"{name}-seed-publisher", grant, opts)
    return MetricSeed(
        f"{name}-seed",
        {
            "scale_set_id": scale_set_id, "metric": metric, "namespace": namespace, "region": region,
            "principal_id": deployer[0], "timeout_seconds": SEED_TIMEOUT_SECONDS,
            "poll_seconds": SEED_POLL_SECONDS,
        },
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[wait])),
    )
