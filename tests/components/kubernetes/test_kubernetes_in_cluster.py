"""The in-cluster component: what it registers for EFA and non-EFA groups, on AWS and elsewhere, and its pins."""

from __future__ import annotations

import libyaml_files
import pulumi
import pytest
from kubernetes_objects import EFA, IB, PLAIN_P5, SHARED, build

from components.kubernetes import SERVICE_ACCOUNTS, refuse_unpinned
from components.kubernetes.gpu_sharing import DEVICE_PLUGIN_CONFIG_LABEL, config_name, sharing_labels
from components.kubernetes.manifests import containers, pod_spec
from gpufleet.lock import load_lock

PINS = load_lock().kubernetes_components


def workload(plan, kind: str, name: str) -> dict:
    return plan.one(kind, name).inputs


def test_aws_registers_every_component_under_the_component_with_its_provider():
    plan = build()
    component = next(r for r in plan.resources if r.type == "gpufleet:kubernetes:InCluster")
    assert all(r.parent == component.urn for r in plan.kubernetes)
    kinds = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in plan.objects()}
    assert {
        ("DaemonSet", "nvidia-device-plugin", "nvdp-nvidia-device-plugin"),
        ("DaemonSet", "nvidia-device-plugin", "nvdp-nvidia-device-plugin-gpu-feature-discovery"),
        ("DaemonSet", "node-feature-discovery", "nfd-worker"),
        ("Deployment", "node-feature-discovery", "nfd-master"),
        ("DaemonSet", "dcgm-exporter", "dcgm-exporter"),
        ("DaemonSet", "kube-system", "aws-efa-k8s-device-plugin"),
        ("Deployment", "kube-system", "cluster-autoscaler"),
        ("CustomResourceDefinition", None, "nodefeatures.nfd.k8s-sigs.io"),
    } <= kinds
    # No opaque release: every object is a typed resource of its own kind.
    assert not [r for r in plan.kubernetes if "helm" in r.type.lower() or "ConfigGroup" in r.type]
    assert all(r.type == f"kubernetes:{r.inputs['apiVersion'] if '/' in r.inputs['apiVersion'] else 'core/v1'}:"
               f"{r.inputs['kind']}" for r in plan.kubernetes)


def test_the_autoscaler_service_account_is_the_one_the_cloud_side_grants():
    plan = build()
    namespace, account = SERVICE_ACCOUNTS["cluster-autoscaler"]
    deployment = workload(plan, "Deployment", "cluster-autoscaler")
    assert deployment["metadata"]["namespace"] == namespace
    assert pod_spec(deployment)["serviceAccountName"] == account
    assert plan.one("ServiceAccount", account).inputs["metadata"]["namespace"] == namespace


def test_efa_plugin_runs_only_on_efa_groups_nodes_through_their_taints():
    plan = build((EFA, SHARED, PLAIN_P5))
    spec = pod_spec(workload(plan, "DaemonSet", "aws-efa-k8s-device-plugin"))
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "gpufleet.io/group", "operator": "In", "values": ["h100"]},
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]},
    ]
    assert spec["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoExecute"},
    ]


def test_no_efa_group_no_efa_plugin_and_other_clouds_get_neither_efa_nor_the_autoscaler():
    assert not [o for o in build((SHARED,)).objects() if o["metadata"]["name"] == "aws-efa-k8s-device-plugin"]
    names = {o["metadata"]["name"] for o in build((IB,), cloud="azure", region="eastus").objects()}
    assert "nvdp-nvidia-device-plugin" in names and "dcgm-exporter" in names
    assert not names & {"aws-efa-k8s-device-plugin", "cluster-autoscaler"}


def test_efa_on_another_cloud_is_refused():
    with pytest.raises(ValueError, match="node groups h100: fabric efa is AWS's only"):
        build((EFA,), cloud="azure", region="eastus")


def test_device_plugin_config_per_sharing_group_picked_by_node_label():
    plan = build()
    data = plan.one("ConfigMap", "nvdp-nvidia-device-plugin-configs").inputs["data"]
    assert set(data) == {"default", "mig-single", "mig-mixed", config_name(SHARED)}
    assert libyaml_files.load(data["default"]) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert libyaml_files.load(data[config_name(SHARED)])["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 4}]
    # The label the cloud side puts on the group's nodes names that config; whole-GPU groups carry none.
    assert sharing_labels(SHARED) == {DEVICE_PLUGIN_CONFIG_LABEL: config_name(SHARED)} and sharing_labels(EFA) == {}
    plugin = workload(plan, "DaemonSet", "nvdp-nvidia-device-plugin")
    sidecar = next(c for c in containers(plugin) if c["name"] == "nvidia-device-plugin-sidecar")
    assert {"name": "NODE_LABEL", "value": DEVICE_PLUGIN_CONFIG_LABEL} in sidecar["env"]
    # A changed config rolls the daemons: the checksum follows the ConfigMap's data.
    other = build((EFA,)).one("DaemonSet", "nvdp-nvidia-device-plugin").inputs
    checksum = "checksum/config"
    assert plugin["spec"]["template"]["metadata"]["annotations"][checksum] != \
        other["spec"]["template"]["metadata"]["annotations"][checksum]


DEDICATED = {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoExecute"}


def test_gpu_daemons_follow_every_group_and_tolerate_their_taints():
    plan = build()
    for kind, name in (("DaemonSet", "nvdp-nvidia-device-plugin"), ("DaemonSet", "dcgm-exporter"),
                       ("DaemonSet", "nvdp-nvidia-device-plugin-gpu-feature-discovery")):
        spec = pod_spec(workload(plan, kind, name))
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert [t["matchExpressions"] for t in terms] == [
            [{"key": "gpufleet.io/group", "operator": "In", "values": ["h100"]}],
            [{"key": "gpufleet.io/group", "operator": "In", "values": ["l40s"]}]]
        assert DEDICATED in spec["tolerations"]
    worker = pod_spec(workload(plan, "DaemonSet", "nfd-worker"))
    assert DEDICATED in worker["tolerations"]


def test_gpu_daemons_stay_on_nodes_whose_labels_types_or_sharing_predate_an_edit():
    """Nodes keep what they registered with until replaced: an edited stack label, fallback type or sharing mode
    must not move the daemons' affinity off them."""
    edited = EFA.__class__(**{**EFA.__dict__, "labels": {**EFA.labels, "example.com/queue": "research"},
                              "instance_types": ("p5en.48xlarge", "p5.48xlarge"), "sharing_mode": "time-slicing",
                              "time_slicing_replicas": 2})
    for name in ("nvdp-nvidia-device-plugin", "dcgm-exporter", "aws-efa-k8s-device-plugin"):
        before = pod_spec(build((EFA,)).one("DaemonSet", name).inputs)["affinity"]
        assert pod_spec(build((edited,)).one("DaemonSet", name).inputs)["affinity"] == before, name


def test_autoscaler_resizes_each_group_by_name_with_the_image_of_the_cluster_minor():
    plan = build(version="1.36")
    container = pod_spec(workload(plan, "Deployment", "cluster-autoscaler"))["containers"][0]
    assert container["image"] == PINS.cluster_autoscaler.images["1.36"].reference
    assert "--nodes=2:16:train-h100" in container["command"] and "--nodes=0:4:train-l40s" in container["command"]
    assert not [arg for arg in container["command"] if arg.startswith("--node-group-auto-discovery")]
    assert container["env"] == [{"name": "AWS_REGION", "value": "us-east-1"}]
    assert "volumeMounts" not in container


def test_autoscaler_waits_for_a_node_longer_than_its_node_check_may_hold_the_launch():
    from components.clouds.aws.lifecycle import LAUNCH_HOOK_TIMEOUT

    command = pod_spec(workload(build(), "Deployment", "cluster-autoscaler"))["containers"][0]["command"]
    (flag,) = [arg for arg in command if arg.startswith("--max-node-provision-time=")]
    minutes = flag.split("=")[1]
    assert minutes.endswith("m") and int(minutes[:-1]) * 60 > LAUNCH_HOOK_TIMEOUT  # the default, 15m, is the hold


def test_autoscaler_refuses_a_minor_the_lock_does_not_pin_and_a_group_without_its_scaling_group():
    with pytest.raises(ValueError, match=r"cluster_autoscaler.images has no pin for Kubernetes 1.29"):
        build(version="1.29")
    nameless = EFA.__class__(**{**EFA.__dict__, "scaling_group_name": ""})
    with pytest.raises(ValueError, match="node group 'h100': scaling_group_name is empty"):
        build((nameless,))


def test_every_image_is_the_lock_reference():
    references = {pin.reference for _, component in PINS for pin in component.images.values()}
    images = {c["image"] for o in build().objects() if "template" in o.get("spec", {}) for c in containers(o)}
    assert images <= references
    assert PINS.nvidia_device_plugin.images["k8s-device-plugin"].reference in images
    assert "@sha256:" in PINS.nvidia_device_plugin.images["k8s-device-plugin"].reference


def test_workloads_wait_for_their_namespace_config_and_rbac():
    plan = build()
    plugin = plan.one("DaemonSet", "nvdp-nvidia-device-plugin")
    for kind, name in (("Namespace", "nvidia-device-plugin"), ("ConfigMap", "nvdp-nvidia-device-plugin-configs"),
                       ("ClusterRoleBinding", "nvdp-nvidia-device-plugin-role-binding")):
        assert plan.urn_of(kind, name) in plugin.depends_on
    master = plan.one("Deployment", "nfd-master")
    assert plan.urn_of("CustomResourceDefinition", "nodefeatures.nfd.k8s-sigs.io") in master.depends_on


def test_a_real_run_refuses_images_without_a_digest(monkeypatch):
    from components import runtime

    monkeypatch.setattr(runtime, "running_offline", lambda: True)  # as under the offline engine
    refuse_unpinned("aws", "1.35", "us-east-1", (SHARED,))  # offline: the plan goes on
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unpinned("aws", "1.35", "us-east-1", (EFA,))
    message = str(refused.value)
    assert "cluster-autoscaler:v1.35.2" in message and "aws-efa-k8s-device-plugin:v0.5.20" in message
    assert "nothing was created" in message
