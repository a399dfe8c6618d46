"""The in-cluster layer on AKS: the GPU Operator's driver per node group (RDMA on InfiniBand groups), the Network
Operator's DOCA driver and RDMA shared device plugin on InfiniBand nodes (NFD labelling their HCAs), the node check
labelling the nodes that pass and the device plugin waiting for that label, one CDI device path, the shared daemons
waiting for the driver, and a real run refused while images lack a digest."""

from __future__ import annotations

import json

import pulumi
import pytest
from kubernetes_objects import EXPECTATIONS, IB, MIG_SPOT, build

from components.kubernetes import component_objects, refuse_unpinned
from components.kubernetes.manifests import pod_spec
from components.kubernetes.node_check import NODE_CHECK_LABEL
from gpufleet.lock import load_lock

PINS = load_lock().kubernetes_components
# The taint main's pools carried: nothing on AKS may rely on it (AKS forbids lifting a pool taint from a node).
OLD_NODE_CHECK = {"key": "gpufleet.io/node-check", "operator": "Equal", "value": "pending", "effect": "NoSchedule"}
PASSED = {"key": "gpufleet.io/node-check", "operator": "In", "values": ["passed"]}
SPOT = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def plan():
    return build((IB, MIG_SPOT), cloud="azure", region="eastus")


def terms(spec: dict) -> list[dict]:
    return spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def tolerated_keys(spec: dict) -> set[str]:
    return {t.get("key") for t in spec.get("tolerations", [])}


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
    assert SPOT not in ib["tolerations"] and SPOT in spot["tolerations"]
    assert spot["manager"]["version"] == PINS.gpu_operator.images["k8s-driver-manager"].digest


def test_each_driver_selects_its_groups_nodes_by_node_selector_the_field_the_operator_reads(plan):
    """gpu-operator v26.3.3 places an NVIDIADriver by spec.nodeSelector only (GetNodeSelector: none = every GPU
    node, so two drivers conflict and neither deploys); nodeAffinity is read by no controller."""
    ib = plan.one("NVIDIADriver", "nd-h100").inputs["spec"]
    spot = plan.one("NVIDIADriver", "nc-a100").inputs["spec"]
    assert "nodeAffinity" not in ib and "nodeAffinity" not in spot
    assert ib["nodeSelector"] == {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"}
    assert spot["nodeSelector"] == {**MIG_SPOT.labels, "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4"}
    # No node carries both selectors' labels with the same values: the validator finds no overlap.
    shared = set(ib["nodeSelector"]) & set(spot["nodeSelector"])
    assert any(ib["nodeSelector"][key] != spot["nodeSelector"][key] for key in shared)


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
    assert term["matchExpressions"][0] == {"key": "gpufleet.io/group", "operator": "In", "values": ["nd-h100"]}
    assert SPOT not in spec["tolerations"] and OLD_NODE_CHECK not in spec["tolerations"]
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


def test_the_node_check_labels_its_node_reads_the_expectation_and_may_only_patch_nodes(plan):
    spec = pod_spec(plan.one("DaemonSet", "gpufleet-node-check-nc-a100").inputs)
    assert SPOT in spec["tolerations"] and not any("node-check" in key for key in tolerated_keys(spec))
    assert len(terms(spec)) == 1  # this group's nodes only: each group has its own expectation
    check = next(c for c in spec["initContainers"] if c["name"] == "node-check")
    env = {e["name"]: e.get("value") for e in check["env"]}
    # AKS pools carry no taint a pod could lift: the check sets the label, and has no taint to remove.
    assert env["NODE_CHECK_LABEL"] == "gpufleet.io/node-check=passed" == "=".join(NODE_CHECK_LABEL)
    assert "NODE_CHECK_TAINT" not in env
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
        assert spec["runtimeClassName"] == "nvidia", name
    gfd = pod_spec(plan.one("DaemonSet", "nvdp-nvidia-device-plugin-gpu-feature-discovery").inputs)
    root = next(v for v in gfd["volumes"] if v["name"] == "driver-root")
    assert root["hostPath"]["path"] == "/run/nvidia/driver"


def test_no_gpu_is_advertised_or_held_before_the_node_check_passed(plan):
    """The device plugin and the DCGM exporter (a GPU client the MIG manager cannot stop while it enables MIG mode)
    run only on nodes the check labelled; GPU feature discovery, whose labels start the MIG manager that partitions
    the node before its check can pass, runs from the start."""
    for name in ("nvdp-nvidia-device-plugin", "dcgm-exporter"):
        spec = pod_spec(plan.one("DaemonSet", name).inputs)
        assert len(terms(spec)) == 2 and all(PASSED in term["matchExpressions"] for term in terms(spec)), name
    gfd = pod_spec(plan.one("DaemonSet", "nvdp-nvidia-device-plugin-gpu-feature-discovery").inputs)
    assert not any(PASSED in term["matchExpressions"] for term in terms(gfd))
    assert plan.one("ClusterPolicy", "cluster-policy").inputs["spec"]["migManager"]["enabled"] is True


def test_the_device_plugin_hands_out_cdi_devices_as_the_toolkit_expects(plan):
    """The toolkit runs in CDI mode (cdi.enabled): the plugin passes devices as the operator's own plugin does under
    CDI, and reads the operator's driver root to write the CDI spec; not NVIDIA_VISIBLE_DEVICES alone."""
    assert plan.one("ClusterPolicy", "cluster-policy").inputs["spec"]["cdi"] == {"enabled": True}
    spec = pod_spec(plan.one("DaemonSet", "nvdp-nvidia-device-plugin").inputs)
    plugin = next(c for c in spec["containers"] if c["name"] == "nvidia-device-plugin-ctr")
    env = {e["name"]: e.get("value") for e in plugin["env"]}
    assert env["DEVICE_LIST_STRATEGY"] == "cdi-annotations,cdi-cri"
    assert env["CDI_ANNOTATION_PREFIX"] == "cdi.k8s.io/"
    assert env["NVIDIA_CDI_HOOK_PATH"] == "/usr/local/nvidia/toolkit/nvidia-cdi-hook"
    assert env["NVIDIA_DRIVER_ROOT"] == "/run/nvidia/driver"
    assert {"name": "driver-root", "mountPath": "/driver-root", "readOnly": True} in plugin["volumeMounts"]
    assert {"name": "driver-root", "hostPath": {"path": "/run/nvidia/driver", "type": "Directory"}} in \
        spec["volumes"]
    # On EKS the node image's runtime takes NVIDIA_VISIBLE_DEVICES: the chart's envvar strategy stays.
    aws = pod_spec(build().one("DaemonSet", "nvdp-nvidia-device-plugin").inputs)
    assert not any(e["name"] == "DEVICE_LIST_STRATEGY" for c in aws["containers"] for e in c.get("env", []))


def test_nfd_labels_the_infiniband_hcas_the_network_operator_places_its_daemons_by(plan):
    """The operator's DOCA driver and RDMA plugin DaemonSets select pci-15b3.present, which NFD's default PCI
    whitelist never sets for a NIC: the rule (Azure/aks-rdma-infiniband's) sets it on the IB HCAs' nodes."""
    rule = plan.one("NodeFeatureRule", "gpufleet-mellanox-infiniband")
    (entry,) = rule.inputs["spec"]["rules"]
    assert entry["labels"] == {"feature.node.kubernetes.io/pci-15b3.present": "true"}
    (match,) = entry["matchFeatures"]
    assert match == {"feature": "pci.device", "matchExpressions": {"vendor": {"op": "In", "value": ["15b3"]},
                                                                   "device": {"op": "In", "value": ["101c", "101e"]}}}
    assert plan.urn_of("CustomResourceDefinition", "nodefeaturerules.nfd.k8s-sigs.io") in rule.depends_on
    without = build((MIG_SPOT,), cloud="azure", region="eastus")
    assert not [o for o in without.objects() if o["kind"] == "NodeFeatureRule"]


def test_nfd_master_may_use_the_system_pool(plan):
    for kind, name in (("DaemonSet", "nfd-worker"), ("Deployment", "nfd-master")):
        tolerations = pod_spec(plan.one(kind, name).inputs)["tolerations"]
        assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in tolerations


def test_nothing_on_aks_tolerates_a_node_check_taint(plan):
    """AKS pools carry no node-check taint (AKS would never let the check lift it); no toleration pretends so."""
    for obj in plan.objects():
        spec = obj.get("spec", {})
        found = [*spec.get("tolerations", []), *spec.get("daemonsets", {}).get("tolerations", []),
                 *spec.get("template", {}).get("spec", {}).get("tolerations", [])]
        assert not any("node-check" in str(t.get("key")) for t in found), obj["metadata"]["name"]


def test_the_shared_daemons_are_unchanged_on_aws():
    plan = build()
    assert "initContainers" not in pod_spec(plan.one("DaemonSet", "dcgm-exporter").inputs)
    assert "CriticalAddonsOnly" not in tolerated_keys(pod_spec(plan.one("DaemonSet", "nfd-worker").inputs))


def test_aks_needs_the_driver_and_the_expectation():
    with pytest.raises(ValueError, match="InClusterArgs.driver is empty"):
        component_objects("azure", "1.35", "eastus", (IB,), PINS, None, EXPECTATIONS)
    with pytest.raises(ValueError, match="InClusterArgs.node_check is empty"):
        component_objects("azure", "1.35", "eastus", (IB,), PINS, "580.126.16", None)
    with pytest.raises(ValueError, match="kubernetes version 1.38: the Ubuntu release of its AKS nodes is not known"):
        component_objects("azure", "1.38", "eastus", (IB,), PINS, "580.126.16", EXPECTATIONS)


def test_a_real_run_refuses_the_unpinned_driver_node_check_and_plugin(monkeypatch):
    from components import runtime

    monkeypatch.setattr(runtime, "running_offline", lambda: True)  # as under the offline engine
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
