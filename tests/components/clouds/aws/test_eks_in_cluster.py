"""What an EKS stack puts inside its cluster and tells its nodes and operators: the Kubernetes provider from the
cluster's endpoint and CA with an `aws eks get-token` user, the in-cluster layer set up for the stack's groups (every
object valid for the cluster's version), the join data each node group gets, and the stack outputs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pulumi
import pytest
from conftest import of_type, one, read_cluster, without_job_operators, write_stack
from kubernetes_schemas import validate

import components.clouds.aws.cluster as cluster_module
from components.clouds.aws.eks_addons import coredns_configuration
from components.clouds.aws.eks_join import EksJoin
from gpufleet.plan.kubernetes_answers import is_kubernetes
from gpufleet.plan.planner import PlanResult, plan_stack

PROVIDER = "pulumi:providers:kubernetes"
LABELS = {"example.com/pool": "train"}
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def eks_cluster(stack: str = "aws-train-eks", **group: Any) -> dict[str, Any]:
    """A shipped EKS stack with labels and a taint on its group."""
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["node_groups"][0].update(labels=LABELS, taints=[TAINT], **group)
    return cluster


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    return plan_stack(write_stack(tmp_path_factory.mktemp("eks"), "eks", eks_cluster()))


@pytest.fixture(scope="module")
def shared_plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    """g6e with time-slicing: the sharing mode reaches the device plugin."""
    cluster = without_job_operators(eks_cluster("aws-infer-eks", gpu_sharing={"mode": "time-slicing", "replicas": 4},
                                                rdma="off"))
    return plan_stack(write_stack(tmp_path_factory.mktemp("eks-shared"), "eks", cluster))


def kubernetes_object(plan: PlanResult, kind: str, name: str) -> Any:
    (found,) = [r for r in plan.resources if is_kubernetes(r.type) and r.inputs["kind"] == kind
                and r.inputs["metadata"]["name"] == name]
    return found


def test_the_provider_reaches_the_cluster_with_a_token_from_the_aws_cli(plan: PlanResult) -> None:
    provider = one(plan, PROVIDER)
    cluster = one(plan, "aws:eks/cluster:Cluster")
    assert provider.property_dependencies["kubeconfig"] == (cluster.urn,)
    config = json.loads(provider.inputs["kubeconfig"])
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "aws"
    assert user["user"]["exec"]["args"] == ["eks", "get-token", "--cluster-name", cluster.inputs["name"],
                                            "--region", "us-east-1", "--output", "json"]
    (entry,) = config["clusters"]
    assert set(entry["cluster"]) == {"server", "certificate-authority-data"}
    assert "token" not in json.dumps(config["users"]).replace("get-token", "")


def test_the_provider_waits_for_admin_access_the_addons_and_the_groups(plan: PlanResult) -> None:
    provider = one(plan, PROVIDER)
    waits_for = set(provider.depends_on)
    assert {r.urn for r in of_type(plan, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation")} <= waits_for
    assert {r.urn for r in of_type(plan, "aws:eks/addon:Addon")} <= waits_for
    assert one(plan, "aws:autoscaling/group:Group").urn in waits_for


def test_every_in_cluster_object_sits_under_the_cluster_in_cluster_layer(plan: PlanResult) -> None:
    in_cluster = one(plan, "gpufleet:kubernetes:InCluster")
    objects = [r for r in plan.resources if is_kubernetes(r.type)]
    assert len(objects) > 20 and {r.parent for r in objects} == {in_cluster.urn}
    assert in_cluster.parent == one(plan, "gpufleet:aws:Cluster").urn


def test_the_autoscaler_resizes_the_group_by_the_name_the_scaling_group_gets(plan: PlanResult) -> None:
    group = one(plan, "aws:autoscaling/group:Group").inputs
    command = kubernetes_object(plan, "Deployment", "cluster-autoscaler").inputs["spec"]["template"]["spec"][
        "containers"][0]["command"]
    assert f"--nodes={group['minSize']}:{group['maxSize']}:{group['name']}" in command


def test_gpu_daemons_follow_the_group_label_the_nodes_register_and_tolerate_its_taint(plan: PlanResult) -> None:
    """By the label gpufleet sets (the node template the group's ASG carries names it), not the stack's labels: an
    edited stack label would move the daemons off the nodes that registered with the old one."""
    tags = {t["key"]: t["value"] for t in one(plan, "aws:autoscaling/group:Group").inputs["tags"]}
    group = tags["k8s.io/cluster-autoscaler/node-template/label/gpufleet.io/group"]
    for name in ("aws-efa-k8s-device-plugin", "nvdp-nvidia-device-plugin", "dcgm-exporter"):
        spec = kubernetes_object(plan, "DaemonSet", name).inputs["spec"]["template"]["spec"]
        (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert term["matchExpressions"][0] == {"key": "gpufleet.io/group", "operator": "In", "values": [group]}
        assert not [e for e in term["matchExpressions"] if e["key"] in LABELS]
        assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in \
            spec["tolerations"]


def test_the_group_sharing_and_fabric_reach_the_in_cluster_layer(shared_plan: PlanResult) -> None:
    group = read_cluster("aws-infer-g6e")["node_groups"][0]["name"]
    configs = kubernetes_object(shared_plan, "ConfigMap", "nvdp-nvidia-device-plugin-configs").inputs["data"]
    sharing = libyaml_files.load(configs[f"group-{group}"])["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    daemons = {r.inputs["metadata"]["name"] for r in shared_plan.resources
               if is_kubernetes(r.type) and r.inputs["kind"] == "DaemonSet"}
    assert "aws-efa-k8s-device-plugin" not in daemons  # rdma off: no EFA on the nodes


def test_the_in_cluster_imds_reader_shares_the_nodes_network_at_hop_limit_1(plan: PlanResult) -> None:
    """The node termination handler (IMDS mode) is the one in-cluster workload that reads IMDS: a hostNetwork pod
    makes no extra hop, so the launch template's hop limit 1 keeps it working and every other pod out."""
    templates = of_type(plan, "aws:ec2/launchTemplate:LaunchTemplate")
    assert templates and all(t.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1 for t in templates)
    handler = kubernetes_object(plan, "DaemonSet", "aws-node-termination-handler").inputs["spec"]["template"]["spec"]
    assert handler["hostNetwork"] is True


@pytest.mark.parametrize("which", ["plan", "shared_plan"])
def test_every_kubernetes_object_validates_strictly_for_the_cluster_version(which: str,
                                                                            request: pytest.FixtureRequest) -> None:
    plan: PlanResult = request.getfixturevalue(which)
    objects = [r.inputs for r in plan.resources if is_kubernetes(r.type)]
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert objects and crds
    for obj in objects:
        validate(obj, "1.35", crds)


def test_each_node_group_is_told_the_cluster_it_joins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    told: list[EksJoin | None] = []
    resolved: dict[str, str] = {}
    original = cluster_module.AwsNodeGroup

    def spy(name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> Any:
        told.append(args.eks)
        if args.eks is not None:
            args.eks.cluster_name.apply(lambda value: resolved.setdefault("cluster_name", value))
            for field in ("endpoint", "certificate_authority", "service_cidr"):
                getattr(args.eks, field).apply(lambda value, f=field: resolved.setdefault(f, value))
        return original(name, args, opts)

    monkeypatch.setattr(cluster_module, "AwsNodeGroup", spy)
    plan = plan_stack(write_stack(tmp_path, "eks", without_job_operators(eks_cluster())))
    assert len(told) == 1 and isinstance(told[0], EksJoin)
    assert resolved["cluster_name"] == one(plan, "aws:eks/cluster:Cluster").inputs["name"]
    assert all(resolved[field] for field in ("endpoint", "certificate_authority", "service_cidr"))


def test_a_vm_cluster_tells_its_groups_no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    told: list[Any] = []
    original = cluster_module.AwsNodeGroup
    monkeypatch.setattr(cluster_module, "AwsNodeGroup",
                        lambda name, args, opts=None: told.append(args.eks) or original(name, args, opts))
    plan_stack(write_stack(tmp_path, "vm", copy.deepcopy(read_cluster("aws-infer-g6e"))))
    assert told == [None]


def test_the_stack_outputs_name_the_cluster_and_how_to_get_a_kubeconfig(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    exported: dict[str, Any] = {}

    def export(name: str, value: Any) -> None:
        if isinstance(value, pulumi.Output):
            value.apply(lambda resolved: exported.setdefault(name, resolved))
        else:
            exported[name] = value

    monkeypatch.setattr(pulumi, "export", export)
    plan = plan_stack(write_stack(tmp_path, "eks", without_job_operators(eks_cluster())))
    name = one(plan, "aws:eks/cluster:Cluster").inputs["name"]
    assert exported["kubernetes_cluster"] == name
    assert exported["kubeconfig"] == f"aws eks update-kubeconfig --name {name} --region us-east-1"
    assert exported["kubernetes_endpoint"].startswith("https://")


def test_coredns_tolerates_the_group_taints_so_the_gpu_nodes_can_run_it(plan: PlanResult) -> None:
    coredns = next(r for r in of_type(plan, "aws:eks/addon:Addon") if r.inputs["addonName"] == "coredns")
    tolerations = json.loads(coredns.inputs["configurationValues"])["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in tolerations
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in tolerations  # the add-on's default, kept
    assert coredns_configuration([]) == {}  # untainted groups: the add-on's own configuration
    others = [r for r in of_type(plan, "aws:eks/addon:Addon") if r.inputs["addonName"] != "coredns"]
    assert not [r.name for r in others if "configurationValues" in r.inputs]
