"""Alibaba preflight of ACK stacks: the API server endpoint is read from CS DescribeClustersV1 through the official
CS client (recorded answers replayed under it, tests/alicloud_replay.py) and /healthz is reached from here as on EKS
and AKS (a local TLS server stands in for the endpoint, tests/api_server.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import responses
from alicloud_replay import FIXTURES, Replay, clients
from api_server import answering_host, closed_port
from conftest import read_cluster

from gpufleet.clouds.alicloud.names import ack_cluster_name
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.preflight.alicloud import kubernetes
from gpufleet.preflight.findings import Finding
from gpufleet.resolve import resolve_cluster


def _stack(**scheduler: Any) -> ResolvedCluster:
    raw = copy.deepcopy(read_cluster("alicloud-train-ack"))
    raw["scheduler"].update(scheduler)
    if scheduler.get("endpoint") == "private":
        raw["scheduler"].pop("public_cidrs", None)
    return resolve_cluster(raw)


def _cluster_answer(folder: Path, stack: ResolvedCluster, public: str, intranet: str) -> None:
    """DescribeClustersV1 listing a cluster of a similar name (the filter is fuzzy) and the stack's, its master_url
    naming the hosts the test serves."""
    name = ack_cluster_name(stack.spec.name, stack.spec.environment, stack.spec.region)
    master_url = json.dumps({"api_server_endpoint": f"https://{public}", "intranet_api_server_endpoint":
                             f"https://{intranet}", "dashboard_endpoint": ""})
    other = {"name": f"{name}-old", "cluster_id": "c0ther", "master_url": json.dumps(
        {"api_server_endpoint": f"https://{closed_port()}"})}
    mine = {"name": name, "cluster_id": "c5b5e80b0b64a4bf6939d2d8fbbc5ded7", "cluster_type": "ManagedKubernetes",
            "region_id": stack.spec.region, "state": "running", "master_url": master_url}
    (folder / "DescribeClustersV1.live.json").write_text(json.dumps({
        "_source": json.loads((FIXTURES / "DescribeClustersV1.none.json").read_text())["_source"].replace(
            "; no cluster of the name yet", "; master_url as DescribeClusterDetail writes it"),
        "status": 200, "body": {"clusters": [other, mine], "page_info": {"page_number": 1, "page_size": 100,
                                                                         "total_count": 2}}}))


def _findings(stack: ResolvedCluster, folder: Path, answer: str) -> tuple[list[Finding], Replay]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        replay = Replay(mock, folder, FIXTURES)
        replay.answer("DescribeClustersV1", answer)
        found = kubernetes.check_endpoint(clients(stack.spec.region), stack)
    assert replay.unexpected == []
    return found, replay


def test_the_public_endpoint_is_read_and_reached(tmp_path: Path) -> None:
    stack = _stack()
    assert stack.spec.scheduler.endpoint == "public"
    _cluster_answer(tmp_path, stack, public=answering_host(), intranet=closed_port())
    found, replay = _findings(stack, tmp_path, "DescribeClustersV1.live")
    assert found == []
    (params,) = [params for action, params in replay.calls if action == "DescribeClustersV1"]
    assert params["name"] == ack_cluster_name(stack.spec.name, stack.spec.environment, stack.spec.region)


def test_a_public_endpoint_that_does_not_answer_blocks(tmp_path: Path) -> None:
    stack = _stack()
    _cluster_answer(tmp_path, stack, public=closed_port(), intranet=answering_host())
    (finding,), _ = _findings(stack, tmp_path, "DescribeClustersV1.live")
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-endpoint", "scheduler.endpoint", True)
    assert "scheduler.public_cidrs" in finding.fix


def test_a_private_endpoint_is_the_intranet_one(tmp_path: Path) -> None:
    stack = _stack(endpoint="private")
    _cluster_answer(tmp_path, stack, public=answering_host(), intranet=closed_port())
    (finding,), _ = _findings(stack, tmp_path, "DescribeClustersV1.live")
    assert finding.blocking and "inside the cluster's network" in finding.fix


@pytest.mark.parametrize("endpoint", ["public", "private"])
def test_a_cluster_not_created_yet_is_a_note(tmp_path: Path, endpoint: str) -> None:
    stack = _stack(endpoint=endpoint)
    (finding,), _ = _findings(stack, tmp_path, "DescribeClustersV1.none")
    assert not finding.blocking and "does not exist yet" in finding.says


@pytest.mark.parametrize(("stack", "asked"), [("alicloud-train-ack", True), ("alicloud-train-ebmgn8v", False)])
def test_preflight_asks_the_endpoint_of_kubernetes_stacks_only(monkeypatch: pytest.MonkeyPatch, stack: str,
                                                                 asked: bool) -> None:
    from gpufleet.preflight import alicloud

    for module in (alicloud.capacity, alicloud.network, alicloud.account):
        monkeypatch.setattr(module, "checks", lambda cluster, clients: [])
    seen: list[str] = []
    monkeypatch.setattr(kubernetes, "check_endpoint", lambda clients, cluster: seen.append(cluster.spec.name) or [])
    assert alicloud.preflight(resolve_cluster(read_cluster(stack)), clients=object()) == []  # type: ignore[arg-type]
    assert bool(seen) is asked
