"""The idle rule's metric is seeded before the autoscale setting that validates it: in the plan, the deployer's
Monitoring Metrics Publisher on the scale set -> its propagation wait -> the seed -> the autoscale setting; and the
seed's provider, run through azure-core's own pipeline (RequestsTransport over a requests session whose adapter
answers with responses in the documented shapes), posts one 100 % data point and polls the metric definitions
until the metric is listed, or stops with the reason when the bounded wait runs out."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import dill
import pytest
import requests
import urllib3
from azure.core.credentials import AccessToken
from azure.core.pipeline.transport import RequestsTransport
from azure_plans import AUTOSCALE, INFER, ROLE, TRAIN, one, plan_variant, shipped, variant
from conftest import of_type
from pulumi.dynamic.dynamic import serialize_provider

from components.clouds.azure.identity import MONITORING_METRICS_PUBLISHER
from components.clouds.azure.metric_seed import SEED_TYPE, MetricSeedProvider, SeedTimeout, seed_id
from gpufleet.clouds.azure.mock_answers import CLIENT, new_resource

SLEEP = "time:index/sleep:Sleep"
SCALE_SET = ("/subscriptions/11111111-1111-4111-8111-111111111111/resourceGroups/rg/providers/"
             "Microsoft.Compute/virtualMachineScaleSets/gpufleet-infer-dev-a100")
PROPS = {"scale_set_id": SCALE_SET, "metric": "gpu_utilization", "namespace": "gpufleet", "region": "eastus",
         "principal_id": CLIENT, "timeout_seconds": 900, "poll_seconds": 30}
# Metric Definitions - List (api-version 2018-01-01) answers {"value": [MetricDefinition]}: a custom metric's
# entry as Azure Monitor lists it (learn.microsoft.com/rest/api/monitor/metric-definitions/list).
LISTED = {"value": [{
    "id": f"{SCALE_SET}/providers/microsoft.insights/metricdefinitions/gpu_utilization",
    "resourceId": SCALE_SET, "namespace": "gpufleet", "isDimensionRequired": False, "unit": "Unspecified",
    "name": {"value": "gpu_utilization", "localizedValue": "gpu_utilization"},
    "primaryAggregationType": "Average", "supportedAggregationTypes": ["Average", "Minimum", "Maximum", "Total"],
    "dimensions": [{"value": "Instance", "localizedValue": "Instance"}],
}]}
NOT_YET: dict[str, Any] = {"value": []}


def _token(oid: str) -> str:
    """An Entra access token's shape (header.payload.signature) carrying the object id claim."""
    payload = base64.urlsafe_b64encode(json.dumps({"oid": oid}).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJSUzI1NiJ9.{payload}.c2ln"


class Credential:
    """A TokenCredential: the deployer's token for whichever audience the pipeline asks."""

    def __init__(self, oid: str = CLIENT) -> None:
        self.oid, self.scopes = oid, []

    def get_token(self, *scopes: str, **_: Any) -> AccessToken:
        self.scopes.extend(scopes)
        return AccessToken(_token(self.oid), 4_102_444_800)


class Recorded(requests.adapters.BaseAdapter):
    """Answers each request with the next recorded (status, body) and keeps what was sent."""

    def __init__(self, answers: list[tuple[int, Any]]) -> None:
        super().__init__()
        self.answers, self.sent = answers, []

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        self.sent.append(request)
        status, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        # A urllib3 response as requests' own HTTPAdapter builds one: azure-core streams from `raw`.
        content = json.dumps(body).encode()
        raw = urllib3.HTTPResponse(body=io.BytesIO(content), status=status, preload_content=False,
                                   headers={"Content-Type": "application/json", "Content-Length": str(len(content))})
        return requests.adapters.HTTPAdapter().build_response(request, raw)

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _provider(answers: list[tuple[int, Any]], oid: str = CLIENT) -> tuple[MetricSeedProvider, Recorded, Clock]:
    adapter, clock = Recorded(answers), Clock()
    session = requests.Session()
    session.mount("https://", adapter)
    provider = MetricSeedProvider(transport=RequestsTransport(session=session, session_owner=False),
                                  credential=Credential(oid), sleep=clock.sleep, clock=clock)
    return provider, adapter, clock


def test_create_posts_one_full_reading_then_polls_until_the_metric_is_listed() -> None:
    provider, adapter, clock = _provider([(200, {}), (200, NOT_YET), (200, NOT_YET), (200, LISTED)])
    result = provider.create(dict(PROPS))
    post, *polls = adapter.sent
    assert post.method == "POST"
    assert post.url == f"https://eastus.monitoring.azure.com{SCALE_SET}/metrics"
    assert post.headers["Authorization"].startswith("Bearer ")
    data = json.loads(post.body)["data"]["baseData"]
    assert (data["metric"], data["namespace"], data["dimNames"]) == ("gpu_utilization", "gpufleet", ["Instance"])
    (series,) = data["series"]
    # 100 %: never under an idle threshold, so the seed cannot scale anything in.
    assert (series["min"], series["max"], series["sum"], series["count"]) == (100, 100, 100, 1)
    assert [p.method for p in polls] == ["GET"] * 3
    assert polls[0].url.startswith(f"https://management.azure.com{SCALE_SET}/providers/Microsoft.Insights/"
                                   "metricDefinitions?")
    assert "api-version=2018-01-01" in polls[0].url and "metricnamespace=gpufleet" in polls[0].url
    assert clock.now == 60  # two waits of poll_seconds
    assert provider.credential.scopes.count("https://monitoring.azure.com/.default") >= 1
    assert "https://management.azure.com/.default" in provider.credential.scopes
    assert result.id == f"{SCALE_SET}/metricDefinitions/gpufleet/gpu_utilization" == seed_id(PROPS)
    assert result.outs == PROPS


def test_create_stops_with_the_reason_when_the_metric_is_never_listed() -> None:
    provider, adapter, clock = _provider([(200, {}), (200, NOT_YET)])
    with pytest.raises(SeedTimeout, match="did not list it within 900 s; autoscale would refuse the idle rule"):
        provider.create(dict(PROPS))
    assert clock.now >= 900
    assert len(adapter.sent) == 1 + 900 // 30 + 1  # the post, then a poll each 30 s until the deadline


def test_a_refused_post_fails_the_create() -> None:
    from azure.core.exceptions import HttpResponseError

    provider, adapter, _ = _provider([(403, {"error": {"code": "AuthorizationFailed"}})])
    with pytest.raises(HttpResponseError):
        provider.create(dict(PROPS))
    assert all(r.method == "POST" for r in adapter.sent)  # no poll after a refused post


def test_credentials_of_another_principal_are_refused_before_any_request() -> None:
    provider, adapter, _ = _provider([(200, {})], oid="44444444-4444-4444-8444-444444444444")
    with pytest.raises(RuntimeError, match="are not the deployer's"):
        provider.create(dict(PROPS))
    assert adapter.sent == []


def test_a_new_scale_set_replaces_the_seed_and_the_wait_bounds_do_not() -> None:
    provider = MetricSeedProvider()
    assert provider.diff("id", PROPS, {**PROPS, "timeout_seconds": 60}).changes is False
    moved = provider.diff("id", PROPS, {**PROPS, "scale_set_id": SCALE_SET + "2"})
    assert moved.changes and moved.replaces == ["scale_set_id"]


def test_the_provider_survives_the_engines_serialization() -> None:
    # What the dynamic provider host does with `__provider`: base64 of dill, loaded back.
    loaded = dill.loads(base64.b64decode(serialize_provider(MetricSeedProvider())))
    assert isinstance(loaded, MetricSeedProvider) and loaded.transport is None


def _chain(plan: Any) -> tuple[Any, Any, Any, Any, Any]:
    scale_set = one(plan, "azure-native:compute:VirtualMachineScaleSet")
    (seed,) = of_type(plan, SEED_TYPE)
    (grant,) = [r for r in of_type(plan, ROLE) if r.name.endswith("-seed-publisher")]
    (wait,) = [s for s in of_type(plan, SLEEP) if s.urn in seed.depends_on]
    return grant, wait, seed, one(plan, AUTOSCALE), scale_set


def test_the_plan_orders_role_wait_seed_then_autoscale() -> None:
    grant, wait, seed, autoscale, scale_set = _chain(shipped(INFER))
    assert grant.inputs["scope"] == seed.inputs["scale_set_id"]
    assert grant.inputs["scope"].endswith("/virtualMachineScaleSets/" + scale_set.inputs["vmScaleSetName"])
    assert scale_set.urn in grant.property_dependencies["scope"]
    assert grant.inputs["principalId"] == CLIENT == seed.inputs["principal_id"]  # getClientConfig's objectId
    assert grant.inputs["principalType"] == "User"
    assert grant.inputs["roleDefinitionId"].endswith(MONITORING_METRICS_PUBLISHER)
    assert grant.urn in wait.depends_on and wait.inputs["createDuration"] == "10m"
    assert seed.urn in autoscale.depends_on
    assert (seed.inputs["metric"], seed.inputs["namespace"], seed.inputs["region"]) == (
        "gpu_utilization", "gpufleet", "eastus")
    rule = autoscale.inputs["profiles"][0]["rules"][0]["metricTrigger"]
    assert (rule["metricName"], rule["metricNamespace"]) == (seed.inputs["metric"], seed.inputs["namespace"])


def test_the_offline_answer_is_what_the_providers_create_returns() -> None:
    physical, outputs = new_resource(SEED_TYPE, "infer-a100-seed", dict(PROPS), "eastus")
    created = _provider([(200, {}), (200, LISTED)])[0].create(dict(PROPS))
    assert physical == created.id and outputs == {}  # the plan adds the inputs as outputs, as create's outs


def test_a_service_principal_deployer_is_assigned_as_one(tmp_path: Path) -> None:
    cluster = variant(INFER, identity={"deployer_principal_type": "ServicePrincipal"})
    grant, *_ = _chain(plan_variant(tmp_path, cluster))
    assert grant.inputs["principalType"] == "ServicePrincipal"


def test_no_seed_without_an_idle_rule() -> None:
    plan = shipped(TRAIN)
    assert not of_type(plan, SEED_TYPE)
    assert not [r for r in of_type(plan, ROLE) if r.name.endswith("-seed-publisher")]
