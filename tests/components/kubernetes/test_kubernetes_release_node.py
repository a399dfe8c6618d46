"""The script the node check runs after a pass: it labels its own node gpufleet.io/node-check=passed (what the AKS
device plugin waits for) and, where the pool carries the startup taint (ACK), removes only that taint, guarded by the
node's resourceVersion; a node already marked is left alone."""

from __future__ import annotations

import importlib.util

import pytest

from components.kubernetes.node_check import SCRIPT

STARTUP = "startup-taint.cluster-autoscaler.kubernetes.io/gpufleet-node-check"
GUARD = {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
LABEL = {"op": "add", "path": "/metadata/labels/gpufleet.io~1node-check", "value": "passed"}


def load(monkeypatch: pytest.MonkeyPatch, node: dict, calls: list, taint: str | None):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as the pod runs it: kube_api.py beside it
    monkeypatch.setenv("NODE_CHECK_LABEL", "gpufleet.io/node-check=passed")
    if taint:
        monkeypatch.setenv("NODE_CHECK_TAINT", taint)
    else:
        monkeypatch.delenv("NODE_CHECK_TAINT", raising=False)
    monkeypatch.setenv("NODE_NAME", "aks-ndh100-0")
    spec = importlib.util.spec_from_file_location("release_node", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def call(method, path, body=None, kind="application/json"):
        calls.append((method, path, body, kind))
        return node if method == "GET" else {}

    monkeypatch.setattr(module, "call", call)
    return module


def test_on_aks_the_check_labels_its_node_and_leaves_the_pools_taints(monkeypatch):
    spot = {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}
    node = {"metadata": {"resourceVersion": "42", "labels": {"kubernetes.io/os": "linux"}},
            "spec": {"taints": [spot]}}
    calls: list = []
    assert load(monkeypatch, node, calls, None).main() == 0
    (_, path, _, _), (method, patched, body, kind) = calls
    assert path == patched == "/api/v1/nodes/aks-ndh100-0"
    assert (method, kind) == ("PATCH", "application/json-patch+json")
    assert body == [GUARD, LABEL]


def test_on_ack_only_the_startup_taint_goes_and_the_label_is_set(monkeypatch):
    spot = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}
    node = {"metadata": {"resourceVersion": "42", "labels": {}}, "spec": {"taints": [
        {"key": STARTUP, "value": "pending", "effect": "NoSchedule"}, spot]}}
    calls: list = []
    assert load(monkeypatch, node, calls, f"{STARTUP}=pending:NoSchedule").main() == 0
    assert calls[1][2] == [GUARD, LABEL, {"op": "replace", "path": "/spec/taints", "value": [spot]}]


def test_a_node_already_marked_is_left_alone(monkeypatch):
    calls: list = []
    node = {"metadata": {"resourceVersion": "7", "labels": {"gpufleet.io/node-check": "passed"}}, "spec": {}}
    assert load(monkeypatch, node, calls, f"{STARTUP}=pending:NoSchedule").main() == 0
    assert [c[0] for c in calls] == ["GET"]
