"""ACK spot groups: a DaemonSet on their nodes drains a node once ECS announces its release. The objects as the
in-cluster layer registers them, and the script against a local metadata service that answers as ECS's does in
security hardening mode (tests/alicloud_metadata.py; 404 until a release is scheduled)."""

from __future__ import annotations

import importlib.util
import urllib.error
from types import ModuleType

import pytest
from kubernetes_objects import CGPU, ERDMA, build

from components.kubernetes.node_check import KUBE_API
from components.kubernetes.spot_drain import NAME, RULES, SCRIPT


def test_the_drain_runs_on_the_spot_groups_nodes_only_from_the_hosts_network() -> None:
    plan = build((ERDMA, CGPU), cloud="alicloud", region="cn-beijing")
    spec = plan.one("DaemonSet", NAME).inputs["spec"]["template"]["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert "gn7i" in str(terms) and "gn8v" not in str(terms)  # CGPU runs spot, ERDMA does not
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["containers"][0]["command"] == ["python3", "/etc/gpufleet/drain_on_notice.py"]
    assert plan.one("ClusterRole", NAME).inputs["rules"] == RULES
    assert {(r["resources"][0], tuple(r["verbs"])) for r in RULES} == {
        ("nodes", ("get", "patch")), ("pods", ("list",)), ("pods/eviction", ("create",))}
    assert plan.one("ConfigMap", NAME).inputs["data"] == {"drain_on_notice.py": SCRIPT.read_text(),
                                                         "kube_api.py": KUBE_API.read_text()}


def test_no_spot_group_no_drain() -> None:
    plan = build((ERDMA,), cloud="alicloud", region="cn-beijing")
    assert not [r for r in plan.kubernetes if NAME in r.inputs["metadata"]["name"]]


POD_SPEC = {"name": "trainer-0", "namespace": "ml", "ownerReferences": [{"kind": "StatefulSet"}]}
PODS = [
    {"metadata": POD_SPEC},
    {"metadata": {"name": "dcgm-x", "namespace": "kube-system", "ownerReferences": [{"kind": "DaemonSet"}]}},
    {"metadata": {"name": "static-y", "namespace": "kube-system",
                  "annotations": {"kubernetes.io/config.mirror": "abc"}}},
    {"metadata": {"name": "leaving", "namespace": "ml", "deletionTimestamp": "2026-11-27T10:00:00Z"}},
]


NOTICE = "instance/spot/termination-time"


def load(monkeypatch: pytest.MonkeyPatch, url: str, calls: list, refuse: set[str]) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as the pod runs it: kube_api.py beside it
    monkeypatch.setenv("NODE_NAME", "cn-beijing.10.0.1.7")
    monkeypatch.setenv("ALICLOUD_METADATA", url)
    monkeypatch.setenv("POLL_SECONDS", "0")
    spec = importlib.util.spec_from_file_location("drain_on_notice", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def call(method: str, path: str, body: object = None, kind: str = "application/json") -> dict:
        calls.append((method, path, body, kind))
        if method == "POST" and path in refuse:
            refuse.discard(path)  # a PodDisruptionBudget says not now, once
            raise urllib.error.HTTPError(path, 429, "Too Many Requests", None, None)  # type: ignore[arg-type]
        return {"items": PODS} if method == "GET" else {}

    monkeypatch.setattr(module, "call", call)
    return module


def test_nothing_happens_before_ecs_announces_a_release(monkeypatch, alicloud_metadata) -> None:
    url, server = alicloud_metadata
    calls: list = []
    assert load(monkeypatch, url, calls, set()).main(rounds=2) == 0
    assert calls == [] and server.refused == []  # every read carried a session token


def test_on_the_notice_the_node_is_cordoned_and_its_workload_pods_evicted(monkeypatch, alicloud_metadata) -> None:
    url, server = alicloud_metadata
    server.items[NOTICE] = "2026-11-27T10:05:00Z"
    calls: list = []
    eviction = "/api/v1/namespaces/ml/pods/trainer-0/eviction"
    load(monkeypatch, url, calls, {eviction}).main(rounds=2)
    node = "/api/v1/nodes/cn-beijing.10.0.1.7"
    assert calls[0] == ("PATCH", node, {"spec": {"unschedulable": True}}, "application/merge-patch+json")
    assert calls[1][:2] == ("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dcn-beijing.10.0.1.7")
    posts = [c for c in calls if c[0] == "POST"]
    # Refused once by a disruption budget, asked again the next round; DaemonSet, static and leaving pods are left.
    assert [c[1] for c in posts] == [eviction, eviction]
    assert posts[0][2] == {"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": "trainer-0", "namespace": "ml"}}
