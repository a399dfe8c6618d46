"""The in-cluster layer on ACK: only the node check (ACK runs its own device plugin, shared-GPU plugin and GPU
exporter), checking each group against its expectation with the driver the node image loaded, and a real run refused
while the node check image lacks a digest."""

from __future__ import annotations

import json

import pulumi
import pytest
from kubernetes_objects import ACK_EXPECTATIONS, CGPU, EFA, ERDMA, IB, SHARED, build

from components.kubernetes import component_objects, refuse_unpinned
from components.kubernetes.manifests import pod_spec
from gpufleet.lock import load_lock

PINS = load_lock().kubernetes_components
NODE_CHECK = {"key": "startup-taint.cluster-autoscaler.kubernetes.io/gpufleet-node-check", "operator": "Equal",
              "value": "pending", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def plan():
    return build((ERDMA, CGPU), cloud="alicloud", region="cn-beijing")


def test_ack_gets_only_the_node_check_the_spot_drain_and_terways_erdma_whitelist(plan):
    components = [c for c, _ in component_objects("alicloud", "1.35", "cn-beijing", (ERDMA, CGPU), PINS, None,
                                                  ACK_EXPECTATIONS)]
    assert components == ["node-check", "spot-drain", "terway-erdma-whitelist"]  # CGPU runs spot, ERDMA eRDMA
    kinds = {o["kind"] for o in plan.objects()}
    assert kinds == {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
    daemonsets = {o["metadata"]["name"] for o in plan.objects() if o["kind"] == "DaemonSet"}
    # No second device plugin next to ACK's, no GFD, NFD or DCGM exporter, nothing of AWS's.
    assert daemonsets == {"gpufleet-node-check-gn8v", "gpufleet-node-check-gn7i", "gpufleet-spot-drain"}


def test_the_node_check_reads_the_host_driver_without_the_operators_runtime_class(plan):
    for group in (ERDMA, CGPU):
        spec = pod_spec(plan.one("DaemonSet", f"gpufleet-node-check-{group.name}").inputs)
        assert "runtimeClassName" not in spec  # ACK makes the NVIDIA runtime containerd's default on GPU nodes
        assert [c["name"] for c in spec["initContainers"]] == ["node-check"]  # no operator validation to wait for
        assert all(v["name"] != "run-nvidia" for v in spec["volumes"])
        assert NODE_CHECK in spec["tolerations"]
        (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert {"key": "gpufleet.io/group", "operator": "In", "values": [group.name]} in term["matchExpressions"]
        check = spec["initContainers"][0]
        assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in check["env"]
        # ACK pools carry the startup taint (ACK's device plugin cannot wait for a label): the check lifts it.
        assert {"name": "NODE_CHECK_TAINT", "value": "startup-taint.cluster-autoscaler.kubernetes.io/"
                "gpufleet-node-check=pending:NoSchedule"} in check["env"]
        data = plan.one("ConfigMap", f"gpufleet-node-check-{group.name}").inputs["data"]
        assert json.loads(data["expect.json"]) == ACK_EXPECTATIONS[group.name]


def test_erdma_nodes_get_terways_eni_whitelist_so_terway_leaves_the_erdma_interfaces_alone(plan):
    """Terway's node-level config (the kube-system ConfigMap a node's terway-config label names) merges
    eni_tag_filter over eni-config: Terway manages only the ENIs it created (creator=terway)."""
    config_map = plan.one("ConfigMap", "gpufleet-erdma-eni-whitelist").inputs
    assert config_map["metadata"]["namespace"] == "kube-system"
    assert json.loads(config_map["data"]["eni_conf"]) == {"eni_tag_filter": {"creator": "terway"}}
    without = component_objects("alicloud", "1.35", "cn-beijing", (CGPU,), PINS, None, ACK_EXPECTATIONS)
    assert "terway-erdma-whitelist" not in [c for c, _ in without]


def test_aks_keeps_waiting_for_the_operators_driver():
    spec = pod_spec(build((IB,), cloud="azure", region="eastus").one("DaemonSet", "gpufleet-node-check-nd-h100")
                    .inputs)
    assert spec["runtimeClassName"] == "nvidia"
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-driver", "node-check"]


def test_ack_needs_the_expectation_and_no_driver():
    with pytest.raises(ValueError, match="InClusterArgs.node_check is empty"):
        component_objects("alicloud", "1.35", "cn-beijing", (ERDMA,), PINS, None, None)
    with pytest.raises(ValueError, match="InClusterArgs.driver is set: ACK installs the driver"):
        component_objects("alicloud", "1.35", "cn-beijing", (ERDMA,), PINS, "580.126.16", ACK_EXPECTATIONS)
    with pytest.raises(ValueError, match="no expectation for node group"):
        component_objects("alicloud", "1.35", "cn-beijing", (ERDMA, CGPU), PINS, None,
                          {ERDMA.name: ACK_EXPECTATIONS[ERDMA.name]})


def test_memory_isolated_sharing_and_efa_are_refused_off_their_cloud():
    with pytest.raises(ValueError, match="gn7i: sharing_mode memory-isolated is ACK's only"):
        component_objects("aws", "1.35", "us-east-1", (CGPU,), PINS)
    with pytest.raises(ValueError, match="h100: fabric efa is AWS's only"):
        component_objects("alicloud", "1.35", "cn-beijing", (EFA,), PINS, None, {EFA.name: {}})
    # A time-slicing group on ACK gets no device plugin config either: ack-ai-installer shares by the node label.
    found = component_objects("alicloud", "1.35", "cn-beijing", (SHARED,), PINS, None, {SHARED.name: {}})
    assert [c for c, _ in found] == ["node-check"]


def test_a_real_run_refuses_the_unpinned_node_check(monkeypatch):
    from components import runtime

    # Offline (told by the monitor, set here as the offline engine would; a test run alone has none): goes on.
    monkeypatch.setattr(runtime, "running_offline", lambda: True)
    refuse_unpinned("alicloud", "1.35", "cn-beijing", (ERDMA,), None, ACK_EXPECTATIONS)
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unpinned("alicloud", "1.35", "cn-beijing", (ERDMA,), None, ACK_EXPECTATIONS)
    message = str(refused.value)
    assert "gpufleet-nodecheck:unpublished" in message
    assert "nvidia" not in message.split("have no digest")[1]  # nothing of NVIDIA's charts runs on ACK
