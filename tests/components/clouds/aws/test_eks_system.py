"""EKS: the system group is a managed node group of small on-demand CPU nodes with no taint, its own role
with only the node policies EKS documents, a launch template on the stack key with IMDSv2 and hop limit 1, and the
stack key admits the default Auto Scaling role EKS launches it under; CoreDNS waits for it, not for GPU capacity;
Cluster Autoscaler runs on it and resizes it (by the Auto Scaling group EKS names) when its size may grow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import of_type, one, read_cluster, without_job_operators, write_stack

from gpufleet.plan.planner import PlanResult, plan_stack

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    cluster = {**read_cluster("aws-train-eks"), "name": "train"}
    cluster["scheduler"] = {**cluster["scheduler"], "system_group": {"size": {"min": 2, "max": 4}}}
    return plan_stack(write_stack(tmp_path_factory.mktemp("eks"), "eks", without_job_operators(cluster)))


def _named(plan: PlanResult, typ: str, name: str):
    (found,) = [r for r in of_type(plan, typ) if r.name == name]
    return found


def test_the_system_group_is_an_untainted_on_demand_managed_node_group(plan: PlanResult) -> None:
    group = one(plan, NODE_GROUP)
    inputs = group.inputs
    assert "taints" not in inputs and inputs["labels"] == {"gpufleet.io/role": "system"}
    assert (inputs["capacityType"], inputs["amiType"], inputs["instanceTypes"]) == (
        "ON_DEMAND", "AL2023_x86_64_STANDARD", ["m7i.xlarge"])
    assert inputs["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 4}
    assert inputs["version"] == "1.35" and len(inputs["subnetIds"]) == 2
    assert group.urn in _named(plan, "pulumi:providers:kubernetes", "train-k8s").depends_on


def test_its_role_has_only_the_node_policies(plan: PlanResult) -> None:
    role = _named(plan, "aws:iam/role:Role", "train-system-role")
    attached = sorted(a.inputs["policyArn"] for a in of_type(plan, ATTACHMENT) if a.name.startswith("train-system-"))
    assert attached == ["arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
                        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"]
    assert role.urn in one(plan, NODE_GROUP).property_dependencies["nodeRoleArn"]


def test_its_template_encrypts_on_the_stack_key_and_keeps_pods_off_imds(plan: PlanResult) -> None:
    template = _named(plan, TEMPLATE, "train-system")
    (disk,) = template.inputs["blockDeviceMappings"]
    assert disk["ebs"]["encrypted"] == "true" and disk["ebs"]["kmsKeyId"].startswith("arn:aws:kms:")
    assert template.inputs["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required",
                                                  "httpPutResponseHopLimit": 1}
    assert "imageId" not in template.inputs and "userData" not in template.inputs
    assert not [v for v in plan.policies["violations"] if v["urn"] == template.urn]


def test_the_stack_key_admits_the_default_autoscaling_role_by_its_exact_arn(plan: PlanResult) -> None:
    key = one(plan, "aws:kms/key:Key")
    statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    uses = statements["EksManagedNodeGroupsUsesKey"]
    assert uses["Condition"]["ArnLike"]["aws:PrincipalArn"].endswith(
        ":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling")
    assert "EksManagedNodeGroupsCreatesGrants" in statements and "AWSServiceRoleForAutoScalingUsesKey" in statements


def test_a_vm_cluster_key_admits_no_extra_role(tmp_path: Path) -> None:
    plan = plan_stack(write_stack(tmp_path, "vm", read_cluster("aws-train-p5")))
    policy = json.loads(one(plan, "aws:kms/key:Key").inputs["policy"])
    assert not [s for s in policy["Statement"] if s["Sid"].startswith("EksManagedNodeGroups")]
    assert of_type(plan, NODE_GROUP) == []


def _autoscaler(plan: PlanResult):
    (found,) = [r for r in of_type(plan, "kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] ==
                "cluster-autoscaler"]
    return found


def _resize_policy(plan: PlanResult):
    return _named(plan, "aws:iam/rolePolicy:RolePolicy", "train-cluster-autoscaler")


def test_the_autoscaler_runs_on_the_system_group_and_resizes_it(plan: PlanResult) -> None:
    autoscaler, group = _autoscaler(plan), one(plan, NODE_GROUP)
    spec = autoscaler.inputs["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"gpufleet.io/role": "system"} and "tolerations" not in spec
    # The system group's Auto Scaling group is EKS's: its name comes from the node group, at the stack's bounds.
    flags = [arg for arg in spec["containers"][0]["command"] if arg.startswith("--nodes=")]
    assert flags[0] == "--nodes=2:16:gpufleet-train-dev-h100" and flags[1].startswith("--nodes=2:4:")
    assert len(flags) == 2 and group.urn in autoscaler.property_dependencies["spec"]
    # Its role may resize that group by ARN, beside the GPU group's.
    policy = _resize_policy(plan)
    (resize,) = [s for s in json.loads(policy.inputs["policy"])["Statement"] if s["Sid"] == "ResizeOwnGroups"]
    assert len(resize["Resource"]) == 2 and group.urn in policy.property_dependencies["policy"]
    assert all(":autoScalingGroupName/" in arn for arn in resize["Resource"])


def test_a_system_group_of_fixed_size_is_not_given_to_the_autoscaler(tmp_path: Path) -> None:
    cluster = {**read_cluster("aws-train-eks"), "name": "train"}
    cluster["scheduler"] = {**cluster["scheduler"], "system_group": {"size": {"min": 2, "max": 2}}}
    fixed = plan_stack(write_stack(tmp_path, "eks", cluster))
    autoscaler, group = _autoscaler(fixed), one(fixed, NODE_GROUP)
    spec = autoscaler.inputs["spec"]["template"]["spec"]
    assert [arg for arg in spec["containers"][0]["command"] if arg.startswith("--nodes=")] == [
        "--nodes=2:16:gpufleet-train-dev-h100"]
    assert group.urn not in autoscaler.property_dependencies.get("spec", [])
    (resize,) = [s for s in json.loads(_resize_policy(fixed).inputs["policy"])["Statement"]
                 if s["Sid"] == "ResizeOwnGroups"]
    assert resize["Resource"] == [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpufleet-train-dev-h100"]
    assert fixed.summary["schedulability"]["unschedulable"] == []
