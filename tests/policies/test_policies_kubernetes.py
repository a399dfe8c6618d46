"""Kubernetes rules (policies/kubernetes/): each fires on a bad object and passes a good one, through the SDK's own
argument types; the in-cluster component's objects pass the mandatory ones."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from aws_rule_args import validate
from conftest import REPO
from kubernetes_objects import CGPU, EFA, ERDMA, IB, MIG_SPOT, SHARED, build
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from gpufleet.plan.policy_runner import run_policies
from policies.registry import RULES_BY_NAME

DS = "kubernetes:apps/v1:DaemonSet"
DEPLOY = "kubernetes:apps/v1:Deployment"
CRON = "kubernetes:batch/v1:CronJob"
MPIJOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"
DIGEST = "@sha256:" + "a" * 64


def daemonset(namespace: str, name: str, **container: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "main", "image": f"example.com/app:1.0{DIGEST}", **container}]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": spec}}}


def gpu_job(tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    worker = {"containers": [{"name": "w", "image": f"example.com/nccl:1{DIGEST}",
                              "resources": {"limits": {"nvidia.com/gpu": 8}}}], "tolerations": tolerations}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "nccl", "namespace": "ml"},
            "spec": {"mpiReplicaSpecs": {"Launcher": {"template": {"spec": {"containers": [
                {"name": "l", "image": f"example.com/nccl:1{DIGEST}"}]}}},
                "Worker": {"template": {"spec": worker}}}}}


def test_image_by_tag_fails_by_digest_passes():
    bad = daemonset("ml", "app", image="example.com/app:1.0")
    (message,) = validate("kubernetes-image-digest-pinned", DS, bad)
    assert "container 'main' runs image 'example.com/app:1.0' by tag" in message
    assert validate("kubernetes-image-digest-pinned", DS, daemonset("ml", "app")) == []


def test_init_containers_and_cron_jobs_are_read_too():
    cron = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "initContainers": [{"name": "init", "image": "busybox:latest"}],
        "containers": [{"name": "main", "image": f"example.com/app:1{DIGEST}"}]}}}}}}
    (message,) = validate("kubernetes-image-digest-pinned", CRON, cron)
    assert "'init'" in message and "busybox:latest" in message


def test_an_image_the_lock_pins_by_tag_only_is_left_to_the_advisory_rule():
    image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2"
    obj = daemonset("kube-system", "cluster-autoscaler", image=image)
    assert validate("kubernetes-image-digest-pinned", DS, obj) == []
    (message,) = validate("kubernetes-image-digest-unconfirmed", DS, obj)
    assert image in message and "pulumi up` refuses it" in message and "k8s-staging-autoscaling" in message
    assert validate("kubernetes-image-digest-unconfirmed", DS, daemonset("ml", "app")) == []


@pytest.mark.parametrize("change, finding", [
    ({"securityContext": {"privileged": True}}, "container 'main' is privileged"),
    ({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}, "container 'main' adds SYS_ADMIN"),
])
def test_privileged_container_fails_outside_the_allow_list(change, finding):
    (message,) = validate("kubernetes-no-privileged-pods", DS, daemonset("ml", "app", **change))
    assert message.startswith(f"ml/app: {finding}")
    assert validate("kubernetes-no-privileged-pods", DS, daemonset("ml", "app")) == []
    # The same container as the EFA device plugin, by its namespace and name, is allowed.
    allowed = daemonset("kube-system", "aws-efa-k8s-device-plugin", **change)
    assert validate("kubernetes-no-privileged-pods", DS, allowed) == []
    # The name alone in another namespace is not.
    assert validate("kubernetes-no-privileged-pods", DS, daemonset("ml", "aws-efa-k8s-device-plugin", **change))


def test_host_pid_fails_and_network_capabilities_pass():
    obj = daemonset("ml", "app")
    obj["spec"]["template"]["spec"]["hostPID"] = True
    (message,) = validate("kubernetes-no-privileged-pods", DS, obj)
    assert "host's process namespace" in message
    fine = daemonset("ml", "app", securityContext={"capabilities": {"add": ["NET_BIND_SERVICE"]}})
    assert validate("kubernetes-no-privileged-pods", DS, fine) == []


def test_gpu_pod_tolerating_every_taint_or_a_look_alike_key_fails():
    (message,) = validate("kubernetes-gpu-toleration-keys", MPIJOB, gpu_job([{"operator": "Exists"}]))
    assert message == ("ml/nccl: GPU pod tolerates every taint (operator Exists with no key); tolerate the GPU taint "
                       "with key 'nvidia.com/gpu' only")
    (message,) = validate("kubernetes-gpu-toleration-keys", MPIJOB,
                          gpu_job([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    assert "through key 'gpu'" in message
    good = gpu_job([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}])
    assert validate("kubernetes-gpu-toleration-keys", MPIJOB, good) == []


def test_a_pod_on_acks_shared_gpus_is_a_gpu_pod():
    job = gpu_job([{"operator": "Exists"}])
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"limits": {"aliyun.com/gpu-mem": 8}}
    (message,) = validate("kubernetes-gpu-toleration-keys", MPIJOB, job)
    assert "tolerates every taint" in message


def test_pods_without_gpus_may_tolerate_broadly():
    obj = daemonset("kube-system", "agent")
    obj["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert validate("kubernetes-gpu-toleration-keys", DS, obj) == []


def test_the_in_cluster_objects_pass_the_mandatory_rules_and_name_their_tag_only_images():
    plan = build((EFA, SHARED))
    rules = [RULES_BY_NAME[name].policy for name in RULES_BY_NAME if name.startswith("kubernetes-")]
    report = run_policies(plan.resources, {}, rules)
    assert [v for v in report.violations if v.level == "mandatory"] == []
    advisory = {(v.policy, v.urn) for v in report.violations}
    assert ("kubernetes-image-digest-unconfirmed", plan.urn_of("Deployment", "cluster-autoscaler")) in advisory
    assert plan.urn_of("DaemonSet", "nvdp-nvidia-device-plugin") not in {urn for _, urn in advisory}


def test_the_aks_in_cluster_objects_pass_the_mandatory_rules():
    plan = build((IB, MIG_SPOT), cloud="azure", region="eastus")
    rules = [RULES_BY_NAME[name].policy for name in RULES_BY_NAME if name.startswith("kubernetes-")]
    report = run_policies(plan.resources, {}, rules)
    assert [v for v in report.violations if v.level == "mandatory"] == []
    advisory = {(v.policy, v.urn) for v in report.violations}
    for kind, name in (("Deployment", "network-operator"), ("DaemonSet", "gpufleet-node-check-nd-h100"),
                       ("Deployment", "gpu-operator")):
        assert ("kubernetes-image-digest-unconfirmed", plan.urn_of(kind, name)) in advisory
    # None of them is on the allow-list: under another name they pass all the same (unprivileged).
    for kind, name in (("DaemonSet", "gpufleet-node-check-nd-h100"), ("Deployment", "gpu-operator"),
                       ("Deployment", "network-operator")):
        obj = copy.deepcopy(plan.one(kind, name).inputs)
        obj["metadata"]["name"] += "-copy"
        assert validate("kubernetes-no-privileged-pods", DS if kind == "DaemonSet" else DEPLOY, obj) == []


def test_the_ack_in_cluster_objects_pass_the_mandatory_rules():
    plan = build((ERDMA, CGPU), cloud="alicloud", region="cn-beijing")
    rules = [RULES_BY_NAME[name].policy for name in RULES_BY_NAME if name.startswith("kubernetes-")]
    report = run_policies(plan.resources, {}, rules)
    assert [v for v in report.violations if v.level == "mandatory"] == []
    advisory = {(v.policy, v.urn) for v in report.violations}
    assert ("kubernetes-image-digest-unconfirmed", plan.urn_of("DaemonSet", "gpufleet-node-check-gn8v")) in advisory


def test_a_privileged_copy_of_a_component_under_another_name_is_blocked():
    plan = build((EFA,))
    efa = plan.one("DaemonSet", "aws-efa-k8s-device-plugin")
    renamed = copy.deepcopy(efa.inputs)
    renamed["metadata"]["name"] = "efa-copy"
    (message,) = validate("kubernetes-no-privileged-pods", DS, renamed)
    assert message.startswith("kube-system/efa-copy: container 'aws-efa-k8s-device-plugin' is privileged")
    assert validate("kubernetes-no-privileged-pods", DEPLOY, plan.one("Deployment", "cluster-autoscaler").inputs) == []


def test_kubernetes_rules_know_no_cloud():
    folder = REPO / "policies" / "kubernetes"
    for path in sorted(folder.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"[\"'](aws|azure-native|alicloud):", text), path.name
        assert not re.search(r"^from \.\.(aws|azure|alicloud)\b", text, re.M), path.name


def test_a_workload_whose_name_is_not_known_yet_is_left_alone():
    obj = daemonset("kube-system", UNKNOWN_STRING_VALUE, securityContext={"privileged": True})
    assert validate("kubernetes-no-privileged-pods", DS, obj) == []
