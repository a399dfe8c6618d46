"""The schedulability check on every shipped Kubernetes stack and the example jobs written for it: the nodes each
group makes (read off the registered pools), the pods the plan creates, and exactly which pods have no node today."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SHIPPED_STACKS

from gpufleet.plan.planner import plan_stack
from gpufleet.plan.record import RecordedResource
from gpufleet.plan.schedulable import SCHEDULABLE
from gpufleet.plan.schedulable.pods import manifest_pods, plan_pods
from gpufleet.plan.schedulable.pools import PoolReadError, node_templates
from gpufleet.plan.schedulable.semantics import Taint
from gpufleet.plan.schedulable.stack import stack_findings
from gpufleet.prepare import prepare
from gpufleet.stackfile import load_stack

KUBERNETES_STACKS = ("aws-train-eks", "aws-infer-eks", "azure-train-aks", "azure-infer-aks", "alicloud-train-ack",
                     "alicloud-infer-ack")
# The stack each cloud's example jobs (examples/kubernetes/<cloud>/) are written for: their workers select its type.
EXAMPLES_FOR = {"aws-train-eks": "aws", "azure-train-aks": "azure", "alicloud-train-ack": "alicloud"}
GPU = Taint("nvidia.com/gpu", "present", "NoSchedule")

NCCL_LAUNCHER = "MPIJob default/nccl-allreduce Launcher"
NCCL_WORKER = "MPIJob default/nccl-allreduce Worker"
DDP_MASTER, DDP_WORKER = "PyTorchJob default/pytorch-ddp Master", "PyTorchJob default/pytorch-ddp Worker"

# Today's pods with no node, per stack (its own pods and the examples written for it): none, now that every
# Kubernetes cluster has its untainted system group (issue 39 part 1), where the MPI launchers, CoreDNS on EKS and
# the operators land. CoreDNS on AKS and ACK is the cloud's (not checked).
AWS_TRAIN_EKS_UNSCHEDULABLE: list[str] = []
AWS_INFER_EKS_UNSCHEDULABLE: list[str] = []
AZURE_TRAIN_AKS_UNSCHEDULABLE: list[str] = []
AZURE_INFER_AKS_UNSCHEDULABLE: list[str] = []
ALICLOUD_TRAIN_ACK_UNSCHEDULABLE: list[str] = []
ALICLOUD_INFER_ACK_UNSCHEDULABLE: list[str] = []
UNSCHEDULABLE_TODAY = {
    "aws-train-eks": AWS_TRAIN_EKS_UNSCHEDULABLE, "aws-infer-eks": AWS_INFER_EKS_UNSCHEDULABLE,
    "azure-train-aks": AZURE_TRAIN_AKS_UNSCHEDULABLE, "azure-infer-aks": AZURE_INFER_AKS_UNSCHEDULABLE,
    "alicloud-train-ack": ALICLOUD_TRAIN_ACK_UNSCHEDULABLE, "alicloud-infer-ack": ALICLOUD_INFER_ACK_UNSCHEDULABLE,
}


def _resolved(stack: str):
    return prepare(load_stack(SHIPPED_STACKS / f"Pulumi.{stack}.yaml", SHIPPED_STACKS))


def example_pods(cloud: str):
    return [pod for path in sorted((REPO / "examples" / "kubernetes" / cloud).glob("*.yaml"))
            for pod in manifest_pods(yaml.safe_load_all(path.read_text()), str(Path(path).relative_to(REPO)))]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_exactly_todays_pods_have_no_node(stack, shipped_plans):
    plan = shipped_plans[stack]
    extra = example_pods(EXAMPLES_FOR[stack]) if stack in EXAMPLES_FOR else []
    found, checked, _ = stack_findings(plan.resources, _resolved(stack), extra)
    assert [finding.pod for finding in found] == UNSCHEDULABLE_TODAY[stack]
    own = plan_pods(plan.resources)[0]
    assert own and checked == len(own) + len(extra), "the plan's own pods and the examples' were all checked"


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_the_plan_reports_its_own_pods_with_no_node_as_mandatory_violations(stack, shipped_plans):
    plan = shipped_plans[stack]
    section = plan.summary["schedulability"]
    own = [entry["pod"] for entry in section["unschedulable"]]
    assert own == [pod for pod in UNSCHEDULABLE_TODAY[stack] if not pod.startswith(("MPIJob", "PyTorchJob"))]
    assert [v for v in plan.policies["violations"] if v["policy"] == SCHEDULABLE] == []
    assert section["pods_checked"] == len(plan_pods(plan.resources)[0])


@pytest.mark.parametrize(("stack", "cloud_dns"), [("azure-train-aks", "AKS's system add-ons (CoreDNS"),
                                                  ("alicloud-train-ack", "ACK's default add-ons (CoreDNS")])
def test_what_the_cloud_renders_is_named_as_not_checked(stack, cloud_dns, shipped_plans):
    not_checked = shipped_plans[stack].summary["schedulability"]["not_checked"]
    assert any(line.startswith(cloud_dns) for line in not_checked)


SYSTEM_GROUP_TYPES = ("aws:eks/nodeGroup:NodeGroup", "alicloud:cs/nodePool:NodePool")


@pytest.mark.parametrize("stack", sorted(EXAMPLES_FOR))
def test_the_launchers_land_on_the_system_group_and_its_gaps_name_each_group_without_it(stack, shipped_plans):
    plan = shipped_plans[stack]
    nodes = node_templates(plan.resources, _resolved(stack))
    system = [node for node in nodes if node.labels.get("gpufleet.io/role") == "system"]
    assert system and all(node.taints == () for node in system)
    launcher = next(pod for pod in example_pods(EXAMPLES_FOR[stack]) if pod.name == NCCL_LAUNCHER)
    found, _, _ = stack_findings(plan.resources, _resolved(stack), [launcher])
    assert found == []
    # Without the system group (a resource of its own on EKS and ACK; AKS's is a profile of the cluster), nothing
    # admits the launcher, and the finding names each GPU group's taint.
    if stack == "azure-train-aks":
        return
    gpu_only = [r for r in plan.resources if not (r.type in SYSTEM_GROUP_TYPES and "system" in r.name)]
    found, _, _ = stack_findings(gpu_only, _resolved(stack), [launcher])
    # The stack's own system pods (the job operators, EKS's autoscaler) are stranded with it.
    (finding,) = [f for f in found if f.pod == NCCL_LAUNCHER]
    assert {f.pod for f in found} >= {NCCL_LAUNCHER, "Deployment mpi-operator/mpi-operator",
                                      "Deployment kubeflow/training-operator"}
    assert all("taint nvidia.com/gpu=present:NoSchedule not tolerated" in gaps for gaps in finding.gaps.values())


def test_eks_nodes_register_the_kubelet_flags_and_the_autoscaler_template_resources(shipped_plans):
    plan = shipped_plans["aws-train-eks"]
    nodes = [node for node in node_templates(plan.resources, _resolved("aws-train-eks")) if node.group == "h100"]
    assert [node.title for node in nodes] == ["h100 (on-demand)", "h100 (spot)"]  # on_demand_base 1 under spot
    for node in nodes:
        assert node.taints == (GPU,)
        assert node.labels["gpufleet.io/group"] == "h100" and node.labels["workload"] == "training"
        assert node.labels["node.kubernetes.io/instance-type"] == "p5.48xlarge"
        assert node.allocatable["nvidia.com/gpu"] == 8 and node.allocatable["vpc.amazonaws.com/efa"] == 32
        assert node.allocatable["hugepages-2Mi"] == Fraction(5128 * 2 * 2**20)
    assert {node.labels["node.kubernetes.io/lifecycle"] for node in nodes} == {"spot", "on-demand"}


def test_aks_gpu_pools_carry_the_checks_label_and_spot_pools_the_spot_taint(shipped_plans):
    nodes = {node.group: node for node in node_templates(shipped_plans["azure-infer-aks"].resources,
                                                          _resolved("azure-infer-aks"))}
    assert nodes["system"].taints == ()  # the untainted system group
    assert nodes["a100spot"].taints == (GPU, Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"))
    assert nodes["a100spot"].labels["gpufleet.io/node-check"] == "passed"  # as the node is once its check passed
    assert "gpufleet.io/node-check" not in nodes["system"].labels
    assert nodes["a100base"].allocatable["nvidia.com/gpu"] >= 1


def test_ack_pools_lift_the_node_check_taint_and_advertise_erdma(shipped_plans):
    (node,) = [node for node in node_templates(shipped_plans["alicloud-train-ack"].resources,
                                               _resolved("alicloud-train-ack")) if node.group != "system"]
    assert node.taints == (GPU,)
    assert node.labels["gpufleet.io/fabric"] == "erdma" and "aliyun/erdma" in node.allocatable


def test_a_stack_pod_with_no_node_fails_the_plan_naming_it(monkeypatch):
    # The autoscaler's Deployment made to select a role no group has: it has nowhere to run.
    from components.kubernetes import autoscaler

    monkeypatch.setattr(autoscaler, "SYSTEM_NODE_LABELS", {"gpufleet.io/role": "nowhere"})
    plan = plan_stack(SHIPPED_STACKS / "Pulumi.aws-train-eks.yaml", SHIPPED_STACKS)
    (violation,) = [v for v in plan.policies["violations"] if v["policy"] == SCHEDULABLE]
    assert violation["level"] == "mandatory" and plan.exit_code == 1
    assert violation["urn"].endswith("kubernetes:apps/v1:Deployment::train-eks-kube-system-cluster-autoscaler")
    assert violation["message"].startswith("no node admits Deployment kube-system/cluster-autoscaler: ")
    (entry,) = plan.summary["schedulability"]["unschedulable"]
    assert entry["pod"] == "Deployment kube-system/cluster-autoscaler" and entry["origin"] == violation["urn"]
    assert set(entry["groups"]) == {"h100", "train-eks-system"}


def test_shared_gpus_are_advertised_as_the_device_plugin_shares_them(shipped_plans):
    aks = {node.group: node for node in node_templates(shipped_plans["azure-infer-aks"].resources,
                                                        _resolved("azure-infer-aks"))}
    assert aks["a100spot"].allocatable["nvidia.com/gpu"] == 7  # MIG all-1g.10gb on one A100 80 GB (single strategy)
    assert aks["a100base"].allocatable["nvidia.com/gpu"] == 1
    eks = [node for node in node_templates(shipped_plans["aws-infer-eks"].resources, _resolved("aws-infer-eks"))
           if "nvidia.com/gpu" in node.allocatable]
    assert {node.allocatable["nvidia.com/gpu"] for node in eks} == {8 * 4}  # 8 L40S x time-slicing replicas 4


def _recorded(type_: str, name: str, inputs: dict, **links) -> RecordedResource:
    return RecordedResource(f"urn:pulumi:s::gpufleet::{type_}::{name}", type_, name, None, (), inputs, True, **links)


def test_an_eks_managed_node_group_makes_nodes_labelled_and_tainted_as_the_eks_api_takes_them():
    launch = _recorded("aws:ec2/launchTemplate:LaunchTemplate", "system-lt", {"instanceType": "m7i.xlarge"})
    pool = _recorded("aws:eks/nodeGroup:NodeGroup", "system", {
        "nodeGroupName": "system", "capacityType": "ON_DEMAND", "labels": {"role": "system"},
        "taints": [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]},
        property_dependencies={"launchTemplate": (launch.urn,)})
    (node,) = node_templates([launch, pool], _resolved("aws-train-eks"))
    assert node.group == "system" and node.taints == (Taint("CriticalAddonsOnly", "true", "NoSchedule"),)
    assert node.labels == {"kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m7i.xlarge",
                           "role": "system", "eks.amazonaws.com/nodegroup": "system",
                           "eks.amazonaws.com/capacityType": "ON_DEMAND"}
    assert "nvidia.com/gpu" not in node.allocatable  # no gpufleet GPU group of that name


def test_a_scaling_group_whose_launch_template_has_no_kubelet_settings_is_named():
    launch = _recorded("aws:ec2/launchTemplate:LaunchTemplate", "lt", {"userData": "bm90IGd6aXA="})
    asg = _recorded("aws:autoscaling/group:Group", "asg", {}, property_dependencies={"launchTemplate": (launch.urn,)})
    with pytest.raises(PoolReadError, match=f"{launch.urn}: user data is no gzipped cloud-config"):
        node_templates([launch, asg], _resolved("aws-train-eks"))
