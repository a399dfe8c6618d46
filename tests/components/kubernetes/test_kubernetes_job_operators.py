"""`scheduler.job_operators`: the stack installs the MPI Operator and the Training Operator it asks for, on EKS, AKS
and ACK alike, at the lock's images, on the system group, validated strictly against the API server's schemas; the
shipped example jobs are what the CRDs the stack installs accept."""

from __future__ import annotations

import copy

import pulumi
import pytest
from conftest import read_cluster, shipped_plan
from kubernetes_objects import ERDMA, SHARED
from kubernetes_schemas import plan_versions, validate
from stack_errors import errors_by_field

from components.kubernetes import component_objects, refuse_unpinned
from components.kubernetes.manifests import pod_spec
from gpufleet.lock import load_lock

PINS = load_lock().kubernetes_components
TRAIN_STACKS = ("aws-train-eks", "azure-train-aks", "alicloud-train-ack")
SYSTEM = {"gpufleet.io/role": "system"}
OPERATORS = {("Deployment", "mpi-operator", "mpi-operator"), ("Deployment", "kubeflow", "training-operator"),
             ("CustomResourceDefinition", None, "mpijobs.kubeflow.org"),
             ("CustomResourceDefinition", None, "pytorchjobs.kubeflow.org")}


@pytest.fixture(scope="module")
def train_plans():
    return {name: shipped_plan(name) for name in TRAIN_STACKS}


def objects_of(plan) -> list[dict]:
    return [r.inputs for r in plan.resources if r.type.startswith("kubernetes:") and "kind" in r.inputs]


def key(obj: dict) -> tuple[str, str | None, str]:
    return obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


@pytest.mark.parametrize("stack", TRAIN_STACKS)
def test_each_cloud_installs_both_operators_on_the_system_group(train_plans, stack):
    objects = objects_of(train_plans[stack])
    assert OPERATORS <= {key(obj) for obj in objects}
    # One MPIJob CRD (the MPI Operator's v2beta1), never the Training Operator's v1 one beside it.
    (mpijobs,) = [o for o in objects if key(o) == ("CustomResourceDefinition", None, "mpijobs.kubeflow.org")]
    assert [v["name"] for v in mpijobs["spec"]["versions"]] == ["v2beta1"]
    pins = {"mpi-operator": PINS.mpi_operator.images["mpi-operator"].reference,
            "training-operator": PINS.training_operator.images["training-operator"].reference}
    for name, image in pins.items():
        (deployment,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
        spec = pod_spec(deployment)
        assert spec["nodeSelector"] == SYSTEM and spec["containers"][0]["image"] == image
    assert train_plans[stack].summary["schedulability"]["unschedulable"] == []


@pytest.mark.parametrize("stack", TRAIN_STACKS)
def test_the_registered_operator_objects_validate_strictly(train_plans, stack):
    """What the plan registers (the inputs the provider sends), not only what the builder returns."""
    objects = objects_of(train_plans[stack])
    namespaces = {"mpi-operator", "kubeflow"}
    mine = [o for o in objects if o["metadata"].get("namespace") in namespaces or key(o) in OPERATORS
            or o["metadata"]["name"] in namespaces or "training-operator" in o["metadata"]["name"]
            or o["metadata"]["name"].startswith(("mpi-operator", "kubeflow-mpijobs"))]
    assert {"Secret", "ValidatingWebhookConfiguration", "ClusterRole", "Deployment"} <= {o["kind"] for o in mine}
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    version = read_cluster(stack)["scheduler"]["version"]
    for obj in mine:
        validate(obj, version, crds)


def test_the_training_operator_reconciles_and_validates_pytorchjob_only(train_plans):
    objects = objects_of(train_plans["aws-train-eks"])
    (deployment,) = [o for o in objects if key(o) == ("Deployment", "kubeflow", "training-operator")]
    assert pod_spec(deployment)["containers"][0]["args"] == ["--enable-scheme=pytorchjob"]
    (hooks,) = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    assert [h["clientConfig"]["service"]["path"] for h in hooks["webhooks"]] == ["/validate-kubeflow-org-v1-pytorchjob"]
    crds = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    assert not crds & {"tfjobs.kubeflow.org", "jaxjobs.kubeflow.org", "paddlejobs.kubeflow.org",
                       "xgboostjobs.kubeflow.org"}


@pytest.mark.parametrize("version", plan_versions())
@pytest.mark.parametrize(("cloud", "region", "groups"), [("aws", "us-east-1", (SHARED,)),
                                                         ("alicloud", "cn-beijing", (ERDMA,))])
def test_the_operators_objects_validate_strictly(cloud, region, groups, version):
    from kubernetes_objects import ACK_EXPECTATIONS

    found = dict(component_objects(cloud, version, region, groups, PINS, None,
                                   ACK_EXPECTATIONS if cloud == "alicloud" else None, ("mpi", "training")))
    objects = found["mpi-operator"] + found["training-operator"]
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert {o["kind"] for o in objects} >= {"CustomResourceDefinition", "Deployment"} and crds
    for obj in objects:
        validate(obj, version, crds)  # raises, naming the object and the schema error, on any invalid one


def test_an_empty_list_installs_no_operator():
    found = [name for name, _ in component_objects("aws", "1.35", "us-east-1", (SHARED,), PINS)]
    assert "mpi-operator" not in found and "training-operator" not in found
    only_mpi = [name for name, _ in component_objects("aws", "1.35", "us-east-1", (SHARED,), PINS,
                                                      job_operators=("mpi",))]
    assert "mpi-operator" in only_mpi and "training-operator" not in only_mpi


def test_a_real_run_refuses_the_operators_images_without_a_digest(monkeypatch):
    from components import runtime

    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    unpinned = {image.image for image in (PINS.mpi_operator.images["mpi-operator"],
                                          PINS.training_operator.images["training-operator"]) if image.digest is None}
    assert unpinned, "both images are pinned: this test needs one by tag only"
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unpinned("aws", "1.35", "us-east-1", (SHARED,), job_operators=("mpi", "training"))
    assert all(image in str(refused.value) for image in unpinned)


def _cluster(**scheduler) -> dict:
    cluster = copy.deepcopy(read_cluster("aws-train-eks"))
    cluster["scheduler"].update(scheduler)
    return cluster


def test_an_unknown_or_repeated_operator_is_refused_by_field():
    assert "'mpi' or 'training'" in errors_by_field(_cluster(job_operators=["mpi", "ray"]))[
        "scheduler.job_operators[1]"]
    assert "names an operator twice" in errors_by_field(_cluster(job_operators=["mpi", "mpi"]))["scheduler"]


def test_job_operators_apply_to_kubernetes_only():
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["scheduler"] = {"kind": "none", "job_operators": ["mpi"]}
    assert "job_operators only apply to kind: kubernetes" in errors_by_field(cluster)["scheduler"]
