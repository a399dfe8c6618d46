"""Issue 39: preflight resolves the Kubernetes endpoint and reaches /healthz from where it runs (scheduler.endpoint).
EKS answers through botocore's Stubber on the real client (moto has no EKS clusters here); the API server is a local
HTTP server standing in for the endpoint EKS returns (tests/api_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_server import closed_port, healthz_server
from aws_preflight_account import REGION, stubbed
from conftest import read_cluster

from gpufleet.preflight.aws import account
from gpufleet.preflight.aws.clients import AwsClients
from gpufleet.preflight.findings import Finding
from gpufleet.resolve import resolve_cluster

NAME = "gpufleet-train-eks-dev"


@pytest.fixture
def api_server(request: pytest.FixtureRequest) -> Iterator[str]:
    server, url = healthz_server(request.param)
    yield url
    server.shutdown()


def _findings(endpoint: str | None) -> list[Finding]:
    cluster = resolve_cluster(read_cluster("aws-train-eks"))
    client, stub = stubbed("eks")
    if endpoint is None:
        stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    else:
        stub.add_response("describe_cluster", {"cluster": {"name": NAME, "endpoint": endpoint}}, {"name": NAME})
    with stub:
        return account.check_endpoint(AwsClients(REGION, lambda s, r: client), cluster)


@pytest.mark.parametrize("api_server", [200, 401], indirect=True)
def test_an_endpoint_that_answers_passes(api_server: str) -> None:
    # 401: anonymous requests refused, yet the server answered, so the network path is open.
    assert _findings(api_server) == []


def test_an_endpoint_that_does_not_answer_blocks_naming_the_field() -> None:
    (finding,) = _findings(f"http://{closed_port()}")  # the port refuses connections
    assert (finding.check, finding.field, finding.blocking) == ("aws-endpoint", "scheduler.endpoint", True)
    assert "/healthz did not answer" in finding.says and "scheduler.public_cidrs" in finding.fix


def test_an_endpoint_that_does_not_resolve_blocks() -> None:
    (finding,) = _findings("https://api.cluster.invalid")  # .invalid never resolves (RFC 6761)
    assert finding.blocking and "does not resolve" in finding.says


def test_a_cluster_not_created_yet_is_a_note() -> None:
    (finding,) = _findings(None)
    assert not finding.blocking and f"cluster {NAME} does not exist yet" in finding.says
