"""Which pod templates the plan's resources create, and what is left unchecked with why."""

from __future__ import annotations

import json

from gpufleet.plan.record import RecordedResource
from gpufleet.plan.schedulable.pods import manifest_pods, plan_pods

SPEC = {"containers": [{"name": "c", "image": "x"}]}


def _resource(type_: str, inputs: dict, name: str = "r") -> RecordedResource:
    return RecordedResource(f"urn:pulumi:s::gpufleet::{type_}::{name}", type_, name, None, (), inputs, True)


def test_each_workload_kind_gives_its_pod_template():
    resources = [
        _resource("kubernetes:apps/v1:DaemonSet", {"metadata": {"name": "d", "namespace": "n"},
                                                   "spec": {"template": {"spec": SPEC}}}),
        _resource("kubernetes:batch/v1:CronJob", {"metadata": {"name": "c"},
                                                  "spec": {"jobTemplate": {"spec": {"template": {"spec": SPEC}}}}}),
        _resource("kubernetes:core/v1:Pod", {"metadata": {"name": "p", "namespace": "n"}, "spec": SPEC}),
        _resource("kubernetes:core/v1:ConfigMap", {"metadata": {"name": "m"}, "data": {}}),
    ]
    pods, unchecked = plan_pods(resources)
    assert [(pod.name, pod.daemon, pod.origin) for pod in pods] == [
        ("DaemonSet n/d", True, resources[0].urn), ("CronJob default/c", False, resources[1].urn),
        ("Pod n/p", False, resources[2].urn)]
    assert unchecked == []


def test_operator_resources_and_cloud_add_ons_are_named_as_not_checked():
    resources = [
        _resource("kubernetes:nvidia.com/v1alpha1:NVIDIADriver", {"spec": {}}, "driver"),
        _resource("alicloud:cs/kubernetesAddon:KubernetesAddon", {"name": "ack-arms-prometheus"}),
        _resource("aws:eks/addon:Addon", {"addonName": "kube-proxy"}),
    ]
    assert plan_pods(resources) == ([], [
        "NVIDIADriver driver: its operator renders the pods from its own templates",
        "ACK add-on ack-arms-prometheus: ACK's own pod spec",
        "EKS add-on kube-proxy: EKS's own pod spec (the stack sets no placement)"])


def test_an_eks_add_on_that_places_its_pods_is_checked_by_that_placement():
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    addon = _resource("aws:eks/addon:Addon", {"addonName": "coredns", "configurationValues": json.dumps(
        {"tolerations": tolerations, "replicaCount": 2})})
    (pod,), _ = plan_pods([addon])
    assert pod.name == "EKS add-on coredns" and pod.spec == {"tolerations": tolerations, "containers": []}


def test_a_job_manifest_gives_one_pod_per_replica_type():
    job = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "j"},
           "spec": {"mpiReplicaSpecs": {"Launcher": {"template": {"spec": SPEC}},
                                        "Worker": {"template": {"spec": SPEC}}}}}
    pods = manifest_pods([job, None], "examples/j.yaml")
    assert [pod.name for pod in pods] == ["MPIJob default/j Launcher", "MPIJob default/j Worker"]
