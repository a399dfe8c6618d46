"""The in-cluster layer on AKS: the GPU Operator's driver per node group (RDMA on InfiniBand groups), the Network
Operator's DOCA driver and RDMA shared device plugin on InfiniBand nodes, the node check lifting the startup taint,
the shared daemons waiting for the driver, and a real run refused while images lack a digest."""

from __future__ import annotations

import json

import pulumi
import pytest
from kubernetes_objects import EXPECTATIONS, IB, MIG_SPOT, build

from components.kubernetes import NODE_CHECK_TAINT, component_objects, refuse_unpinned
from components.kubernetes.manifests import pod_spec
from gpufleet.lock import load_lock

PINS = load_lock().kubernetes_components
NODE_CHECK = {"key": "gpufleet.io/node-check", "operator": "Equal", "value": "pending", "effect": "NoSchedule"}
SPOT = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def plan():
    return build((IB, MIG_SPOT), cloud="azure", region="eastus")


def terms(spec: dict) -> list[dict]:
    return spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_the_node_check_taint_is_the_one_pools_carry():
    assert NODE_CHECK_TAINT == ("gpufleet.io/node-check", "pending", "NoSchedule")


def test_aks_gets_the_operator_rdma_plugin_and_node_check_and_nothing_of_aws(plan):
    components = [c for c, _ in component_objects("azure", "1.35", "eastus", (IB, MIG_SPOT), PINS, "580.126.16",
                                                  EXPECTATIONS)]
    assert components == ["gpu-operator", "nvidia-device-plugin", "node-feature-discovery", "dcgm-exporter",
                          "network-operator", "node-check"]
    names = {(o["kind"], o["metadata"]["name"]) for o in plan.objects()}
    assert ("Deployment", "cluster-autoscaler") not in names
    assert ("DaemonSet", "aws-node-termination-handler") not in names
    # Without an InfiniBand group there is no RDMA plugin.
    without = [c for c, _ in component_objects("azure", "1.35", "eastus", (MIG_SPOT,), PINS, "580.126.16",
                                               EXPECTATIONS)]
    assert "network-operator" not in without and "gpu-operator" in without


def test_each_group_gets_its_driver_at_the_lock_version_with_rdma_only_on_infiniband(plan):
    ib = plan.one("NVIDIADriver", "nd-h100").inputs["spec"]
    spot = plan.one("NVIDIADriver", "nc-a100").inputs["spec"]
    assert (ib["version"], spot["version"]) == ("580.126.16", "580.126.16")
    assert ib["rdma"]["enabled"] is True and spot["rdma"]["enabled"] is False
    (term,) = ib["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["Standard_ND96isr_H100_v5"]
    assert NODE_CHECK in ib["tolerations"] and SPOT not in ib["tolerations"]
    assert NODE_CHECK in spot["tolerations"] and SPOT in spot["tolerations"]
    assert spot["manager"]["version"] == PINS.gpu_operator.images["k8s-driver-manager"].digest


def test_the_cluster_policy_runs_only_driver_and_toolkit(plan):
    policy = plan.one("ClusterPolicy", "cluster-policy")
    assert policy.type == "kubernetes:nvidia.com/v1:ClusterPolicy"
    spec = policy.inputs["spec"]
    assert spec["driver"] == {"enabled": True, "useNvidiaDriverCRD": True}
    assert spec["toolkit"]["enabled"] is True
    assert spec["toolkit"]["version"] == PINS.gpu_operator.images["container-toolkit"].digest
    for name in ("devicePlugin", "dcgmExporter", "gfd", "nodeStatusExporter"):
        assert spec[name] == {"enabled": False}, name
    # The MIG group's layout is applied by the operator's MIG manager; without a MIG group it stays off.
    assert spec["migManager"]["enabled"] is True
    assert spec["migManager"]["version"] == PINS.gpu_operator.images["k8s-mig-manager"].digest
    alone = build((IB,), cloud="azure", region="eastus").one("ClusterPolicy", "cluster-policy").inputs["spec"]
    assert alone["migManager"] == {"enabled": False}
    # The custom resources wait for their CRDs.
    assert plan.urn_of("CustomResourceDefinition", "clusterpolicies.nvidia.com") in policy.depends_on
    assert plan.urn_of("CustomResourceDefinition", "nvidiadrivers.nvidia.com") in \
        plan.one("NVIDIADriver", "nd-h100").depends_on


def test_the_nic_policy_exposes_only_infiniband_hcas_on_infiniband_nodes_with_the_doca_driver(plan):
    policy = plan.one("NicClusterPolicy", "nic-cluster-policy")
    assert policy.type == "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
    spec = policy.inputs["spec"]
    config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
    (resource,) = config["configList"]
    assert resource["resourceName"] == "ib"
    assert resource["selectors"] == {"vendors": ["15b3"], "linkTypes": ["infiniband"]}
    (term,) = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["Standard_ND96isr_H100_v5"]
    assert NODE_CHECK in spec["tolerations"] and SPOT not in spec["tolerations"]
    # The policy names the version without the -<os>-<arch> suffix the operator adds to the pinned tag.
    doca = spec["ofedDriver"]
    assert f"{doca['repository']}/{doca['image']}:{doca['version']}-ubuntu24.04-amd64" == \
        PINS.network_operator.images["doca-driver"].image
    assert plan.urn_of("CustomResourceDefinition", "nicclusterpolicies.mellanox.com") in policy.depends_on
    assert PINS.network_operator.images["network-operator"].image in \
        pod_spec(plan.one("Deployment", "network-operator").inputs)["containers"][0]["image"]


def test_the_operators_run_on_the_system_pool_not_on_gpu_nodes(plan):
    for name in ("gpu-operator", "network-operator"):
        spec = pod_spec(plan.one("Deployment", name).inputs)
        assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in spec["tolerations"], name
        assert not any(t.get("key") in ("nvidia.com/gpu", "gpufleet.io/node-check") for t in spec["tolerations"])


def test_the_node_check_runs_through_its_taint_reads_the_expectation_and_may_only_patch_nodes(plan):
    spec = pod_spec(plan.one("DaemonSet", "gpufleet-node-check-nc-a100").inputs)
    assert NODE_CHECK in spec["tolerations"] and SPOT in spec["tolerations"]
    assert len(terms(spec)) == 1  # this group's nodes only: each group has its own expectation
    check = next(c for c in spec["initContainers"] if c["name"] == "node-check")
    env = {e["name"]: e.get("value") for e in check["env"]}
    assert env["NODE_CHECK_TAINT"] == "gpufleet.io/node-check=pending:NoSchedule"
    assert "images.nodecheck --expect /etc/gpufleet/expect.json" in check["command"][-1]
    assert not any(c.get("securityContext", {}).get("privileged") for c in spec["initContainers"])
    for group in (IB, MIG_SPOT):
        data = plan.one("ConfigMap", f"gpufleet-node-check-{group.name}").inputs["data"]
        assert json.loads(data["expect.json"]) == EXPECTATIONS[group.name]
    (rule,) = plan.one("ClusterRole", "gpufleet-node-check").inputs["rules"]
    assert rule == {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}


def test_the_shared_daemons_wait_for_the_driver_and_read_it_where_the_operator_puts_it(plan):
    for kind, name in (("DaemonSet", "nvdp-nvidia-device-plugin"), ("DaemonSet", "dcgm-exporter"),
                       ("DaemonSet", "nvdp-nvidia-device-plugin-gpu-feature-discovery")):
        spec = pod_spec(plan.one(kind, name).inputs)
        first = spec["initContainers"][0]
        assert first["name"] == "toolkit-validation" and "toolkit-ready" in first["args"][0], name
        assert NODE_CHECK in spec["tolerations"], name
        assert spec["runtimeClassName"] == "nvidia", name
    gfd = pod_spec(plan.one("DaemonSet", "nvdp-nvidia-device-plugin-gpu-feature-discovery").inputs)
    root = next(v for v in gfd["volumes"] if v["name"] == "driver-root")
    assert root["hostPath"]["path"] == "/run/nvidia/driver"


def test_nfd_labels_unchecked_nodes_and_its_master_may_use_the_system_pool(plan):
    """The operators place their drivers by NFD's labels: NFD must run through the node-check taint, or the driver
    (and so the check) never comes."""
    for kind, name in (("DaemonSet", "nfd-worker"), ("Deployment", "nfd-master")):
        tolerations = pod_spec(plan.one(kind, name).inputs)["tolerations"]
        assert NODE_CHECK in tolerations and {"key": "CriticalAddonsOnly", "operator": "Exists"} in tolerations


def test_the_shared_daemons_are_unchanged_on_aws():
    plan = build()
    assert "initContainers" not in pod_spec(plan.one("DaemonSet", "dcgm-exporter").inputs)
    assert NODE_CHECK not in pod_spec(plan.one("DaemonSet", "nfd-worker").inputs)["tolerations"]


def test_aks_needs_the_driver_and_the_expectation():
    with pytest.raises(ValueError, match="InClusterArgs.driver is empty"):
        component_objects("azure", "1.35", "eastus", (IB,), PINS, None, EXPECTATIONS)
    with pytest.raises(ValueError, match="InClusterArgs.node_check is empty"):
        component_objects("azure", "1.35", "eastus", (IB,), PINS, "580.126.16", None)
    with pytest.raises(ValueError, match="kubernetes version 1.38: the Ubuntu release of its AKS nodes is not known"):
        component_objects("azure", "1.38", "eastus", (IB,), PINS, "580.126.16", EXPECTATIONS)


def test_a_real_run_refuses_the_unpinned_driver_node_check_and_plugin(monkeypatch):
    from components import runtime

    refuse_unpinned("azure", "1.35", "eastus", (IB,), "580.126.16", EXPECTATIONS)  # offline: the plan goes on
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unpinned("azure", "1.35", "eastus", (IB,), "580.126.16", EXPECTATIONS)
    message = str(refused.value)
    for image in ("gpufleet-nodecheck:unpublished", "nvcr.io/nvidia/driver:580.126.16-ubuntu24.04",
                  "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin:network-operator-v25.10.0",
                  "nvcr.io/nvidia/mellanox/doca-driver:doca3.2.0-25.10-1.2.8.0-2-ubuntu24.04-amd64",
                  "nvcr.io/nvidia/gpu-operator:v26.3.3", "nvcr.io/nvidia/cloud-native/network-operator:v25.10.0"):
        assert image in message, image
    # Another driver than the lock's pinned tag, or the 1.34 node OS, is refused naming the tag to pin.
    with pytest.raises(pulumi.RunError, match=r"nvidia/driver:580\.126\.16-ubuntu22\.04: the lock pins"):
        refuse_unpinned("azure", "1.34", "eastus", (IB,), "580.126.16", EXPECTATIONS)
