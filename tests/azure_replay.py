"""Azure SDK clients that answer from recorded responses: a transport replaying JSON fixtures by method and path (the
real client code builds each request, runs the retry and auth policies and deserialises the answer), and a test
credential. Every request must be a read; anything unanswered fails the test with the request named."""

from __future__ import annotations

import copy
import io
import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import requests
from api_server import answering_host
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest._requests_basic import RestRequestsTransportResponse
from conftest import read_cluster

from gpufleet.clouds.azure.names import aks_cluster_name, resource_group_name
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.preflight.azure import AzureClients, make_clients, preflight
from gpufleet.preflight.azure.account import cluster_providers
from gpufleet.preflight.findings import Finding
from gpufleet.resolve import resolve_cluster

FIXTURES = Path(__file__).parent / "data" / "preflight" / "azure"
SUBSCRIPTION = "6f1c7e52-3d4b-4c1a-9a3e-0d2b8c5e7f10"
OTHER_SUBSCRIPTION = "0b7d2f4e-8a15-4c33-b6e9-5f2a1c3d9e80"
RG = f"/subscriptions/{SUBSCRIPTION}/resourceGroups"
TINY_BACKOFF = 0.001
TRAIN, INFER = "azure-train-ndh100", "azure-infer-a100"


def fixture(name: str, directory: Path = FIXTURES, **values: str) -> dict[str, Any]:
    """A recorded answer (preflight's unless `directory` says), its request path's {placeholders} filled
    ({subscription} always)."""
    text = (directory / f"{name}.json").read_text()
    for key, value in {"subscription": SUBSCRIPTION, **values}.items():
        text = text.replace("{" + key + "}", value)
    recorded = json.loads(text)
    assert recorded.get("_source"), f"{name}.json cites no API reference"
    return recorded


class Replay(HttpTransport):
    """Answers from fixtures keyed by (method, path); a route given several answers gives them in turn, the last one
    repeating. A route answered by an exception raises it (a timeout). sleep() records and returns at once."""

    def __init__(self, writes: bool = False) -> None:
        self._routes: dict[tuple[str, str], list[Any]] = {}
        self._queries: dict[tuple[str, str], dict[str, str]] = {}
        self._lock = threading.Lock()
        self.writes = writes  # preflight only reads; a dynamic provider's create also writes
        self.asked: list[str] = []
        self.sent: list[Any] = []  # the requests themselves (headers, body), in order
        self.slept: list[float] = []

    def add(self, recorded: dict[str, Any], *more: dict[str, Any] | BaseException) -> Replay:
        method, path = recorded["request"].split(" ", 1)
        key = (method, path.lower())
        self._routes[key] = [recorded, *more]
        self._queries[key] = recorded.get("query", {})
        return self

    def answer(self, request: str, *answers: dict[str, Any] | BaseException) -> Replay:
        """Answers for a request given as 'GET /path' (errors, timeouts)."""
        method, path = request.split(" ", 1)
        self._routes[(method, path.lower())] = list(answers)
        return self

    def send(self, request: Any, **kwargs: Any) -> Any:
        url = urlparse(request.url)
        key = (request.method, url.path.lower())
        with self._lock:
            self.asked.append(f"{request.method} {url.path}")
            self.sent.append(request)
            assert self.writes or request.method == "GET", f"{request.method} {url.path}: preflight must only read"
            answers = self._routes.get(key)
            assert answers, f"no recorded answer for {request.method} {url.path}"
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        for name, value in self._queries.get(key, {}).items():
            assert query.get(name) == value, f"{url.path}: {name}={query.get(name)!r}, expected {value!r}"
        if isinstance(answer, BaseException):
            raise answer
        return _response(request, answer)

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> Replay:
        return self

    def __exit__(self, *args: object) -> None:
        pass

    def sleep(self, duration: float) -> None:
        self.slept.append(duration)


def _response(request: Any, answer: dict[str, Any]) -> Any:
    raw = requests.Response()
    raw.status_code = int(answer.get("status", 200))
    raw.headers.update({"Content-Type": "application/json; charset=utf-8", **answer.get("headers", {})})
    raw.raw = io.BytesIO(json.dumps(answer.get("body", {})).encode())
    raw.url = request.url
    raw.encoding = "utf-8"
    response = RestRequestsTransportResponse(request=request, internal_response=raw)
    response.read()
    return response


class TestCredential:
    """A TokenCredential: a token valid for an hour, or the error an expired sign-in raises."""

    __test__ = False

    def __init__(self, error: str | None = None) -> None:
        self.error = error

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        if self.error:
            raise ClientAuthenticationError(self.error)
        return AccessToken("recorded-token", int(time.time()) + 3600)


def clients(replay: Replay, credential: Any = None) -> AzureClients:
    return make_clients(SUBSCRIPTION, credential or TestCredential(), transport_factory=lambda: replay,
                        backoff=TINY_BACKOFF, credential_source="the test credential")


def cluster(stack: str = TRAIN, group: dict[str, Any] | None = None, **changes: Any) -> ResolvedCluster:
    raw = copy.deepcopy(read_cluster(stack))
    raw.update(changes)
    raw["node_groups"][0].update(group or {})
    return resolve_cluster(raw)


def account(stack: ResolvedCluster, skus: str = "skus-eastus", usages: str | dict[str, Any] = "usages-eastus",
            feature: str = "feature-encryptionathost-registered",
            infiniband_feature: str = "feature-aksinfinibandsupport-registered", **provider_states: str) -> Replay:
    """A subscription answering every call the stack needs: registered providers unless provider_states says
    otherwise (namespace with dots as underscores -> fixture), the features (EncryptionAtHost, and AKS's
    AKSInfinibandSupport, asked for AKS stacks with InfiniBand only), the SKU and usage lists."""
    replay = Replay()
    for namespace in cluster_providers(stack):
        state = provider_states.get(namespace.replace(".", "_"), "provider-registered")
        replay.add(fixture(state, namespace=namespace))
    replay.add(fixture(feature)).add(fixture(infiniband_feature)).add(fixture(skus))
    replay.add(usages if isinstance(usages, dict) else fixture(usages))
    if stack.spec.scheduler.kind == "kubernetes":
        replay.add(managed_cluster(stack))
    return replay


def managed_cluster(stack: ResolvedCluster, fqdn: str | None = None, private_fqdn: str | None = None) -> dict[str, Any]:
    """The stack's AKS cluster as Managed Clusters - Get answers it, both its endpoints on hosts that answer /healthz
    (a local TLS server) unless given."""
    spec = stack.spec
    return fixture("managed-cluster", group=resource_group_name(spec.name, spec.environment, spec.region,
                                                                spec.network.resource_group),
                   cluster=aks_cluster_name(spec.name, spec.environment),
                   fqdn=fqdn or answering_host(), private_fqdn=private_fqdn or answering_host())


def usages_with(change: dict[str, tuple[int, int] | None]) -> dict[str, Any]:
    """The recorded usages with quotas changed to (in use, limit), or removed (None)."""
    recorded = fixture("usages-eastus")
    kept = []
    for usage in recorded["body"]["value"]:
        name = usage["name"]["value"]
        if name in change and change[name] is None:
            continue
        if name in change:
            usage["currentValue"], usage["limit"] = change[name]
        kept.append(usage)
    recorded["body"]["value"] = kept
    return recorded


def run(stack: ResolvedCluster, replay: Replay, credential: Any = None) -> list[Finding]:
    return preflight(stack, clients(replay, credential))


def only(findings: list[Finding], check: str) -> Finding:
    found = [f for f in findings if f.check == check]
    assert len(found) == 1, findings
    return found[0]
