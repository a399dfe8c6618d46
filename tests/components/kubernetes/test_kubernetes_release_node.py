"""The script the node check runs after a pass: it removes only the node-check taint from its own node, guarded by
the node's resourceVersion, and does nothing when the taint is already gone."""

from __future__ import annotations

import importlib.util

import pytest

from components.kubernetes.node_check import SCRIPT


def load(monkeypatch: pytest.MonkeyPatch, node: dict, calls: list):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as the pod runs it: kube_api.py beside it
    monkeypatch.setenv("NODE_CHECK_TAINT", "gpufleet.io/node-check=pending:NoSchedule")
    monkeypatch.setenv("NODE_NAME", "aks-ndh100-0")
    spec = importlib.util.spec_from_file_location("release_node", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def call(method, path, body=None, kind="application/json"):
        calls.append((method, path, body, kind))
        return node if method == "GET" else {}

    monkeypatch.setattr(module, "call", call)
    return module


def test_only_the_node_check_taint_goes(monkeypatch):
    spot = {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}
    node = {"metadata": {"resourceVersion": "42"}, "spec": {"taints": [
        {"key": "gpufleet.io/node-check", "value": "pending", "effect": "NoSchedule"}, spot]}}
    calls: list = []
    assert load(monkeypatch, node, calls).main() == 0
    (_, path, _, _), (method, patched, body, kind) = calls
    assert path == patched == "/api/v1/nodes/aks-ndh100-0"
    assert (method, kind) == ("PATCH", "application/json-patch+json")
    assert body == [{"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
                    {"op": "replace", "path": "/spec/taints", "value": [spot]}]


def test_a_node_without_the_taint_is_left_alone(monkeypatch):
    calls: list = []
    node = {"metadata": {"resourceVersion": "7"}, "spec": {}}
    assert load(monkeypatch, node, calls).main() == 0
    assert [c[0] for c in calls] == ["GET"]
