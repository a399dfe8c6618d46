"""What an EKS node may reach and do: the security group rules between the nodes and the EKS cluster security group
(EFA's all-traffic self rule kept), and the node role's EKS statements (image pulls, the Pod Identity agent of its
own cluster), through parliament, with no workload permission (no CNI, no autoscaling beyond the node check's)."""

from __future__ import annotations

import json
from typing import Any

import pulumi
from parliament import analyze_policy_string

from components.clouds.aws.identity import NodeIdentityArgs, node_policy_document
from components.clouds.aws.security import eks_control_plane_access, node_security_group
from gpufleet.plan.engine import run_program
from gpufleet.plan.record import RecordedResource

SG = "aws:ec2/securityGroup:SecurityGroup"
RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
CLUSTER_SG = "sg-0cluster0000000001"
ACCOUNT, REGION = "123456789012", "us-east-1"
LOG_GROUP = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/gpufleet/train/dev"


def record(brought: bool) -> list[RecordedResource]:
    def program() -> None:
        opts = pulumi.ResourceOptions()
        cluster_sg = pulumi.Output.from_input(CLUSTER_SG)
        if brought:
            node_sg_id: pulumi.Input[str] = "sg-0brought000000001"
        else:
            node_sg_id = node_security_group("train", "vpc-0a", ["10.0.0.0/24"], {}, opts, None,
                                             eks_cluster_sg_id=cluster_sg).id
        eks_control_plane_access("train", node_sg_id, cluster_sg, opts, brought_node_group=brought)

    return run_program(program, {}, project="gpufleet", stack="test", region=REGION, zones=["us-east-1a"])


def rules_by_port(resources: list[RecordedResource]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r.inputs["securityGroupId"], r.inputs["fromPort"]): r.inputs for r in resources if r.type == RULE}


def test_a_created_node_group_admits_the_control_plane_inline_and_keeps_efas_self_rule() -> None:
    resources = record(brought=False)
    (sg,) = [r for r in resources if r.type == SG]
    ingress = sg.inputs["ingress"]
    from_cluster = {rule["fromPort"]: rule for rule in ingress if rule.get("securityGroups") == [CLUSTER_SG]}
    assert set(from_cluster) == {443, 10250}
    assert all(r["protocol"] == "tcp" and r["toPort"] == r["fromPort"] for r in from_cluster.values())
    assert any(r["protocol"] == "-1" and r["self"] for r in ingress)
    assert any(r["protocol"] == "-1" and r.get("self") for r in sg.inputs["egress"])
    # The only separate rule: the API server admits the nodes, on the cluster security group EKS owns.
    (rule,) = [r for r in resources if r.type == RULE]
    api = rule.inputs
    assert api["securityGroupId"] == CLUSTER_SG and api["fromPort"] == api["toPort"] == 443
    assert api["ipProtocol"] == "tcp" and rule.property_dependencies["referencedSecurityGroupId"] == (sg.urn,)


def test_a_brought_node_group_gets_the_control_planes_rules_as_resources() -> None:
    rules = rules_by_port(record(brought=True))
    assert set(rules) == {(CLUSTER_SG, 443), ("sg-0brought000000001", 443), ("sg-0brought000000001", 10250)}
    for (group, _), rule in rules.items():
        peer = "sg-0brought000000001" if group == CLUSTER_SG else CLUSTER_SG
        assert rule["referencedSecurityGroupId"] == peer and rule["ipProtocol"] == "tcp"


def test_a_vm_node_group_is_unchanged_without_a_cluster_group() -> None:
    def program() -> None:
        node_security_group("train", "vpc-0a", [], {}, pulumi.ResourceOptions(), None)

    (sg,) = run_program(program, {}, project="gpufleet", stack="test", region=REGION, zones=["us-east-1a"])
    assert [r["description"] for r in sg.inputs["ingress"]] == ["all traffic among nodes (EFA)"]


def statements(eks_cluster: str | None) -> dict[str, dict[str, Any]]:
    args = NodeIdentityArgs(account_id=ACCOUNT, region=REGION, log_group_arn=LOG_GROUP, group_names=["train-h100"],
                            mark_unhealthy=True, agent_tags=True, eks_cluster=eks_cluster)
    return {s["Sid"]: s for s in json.loads(node_policy_document(ACCOUNT, LOG_GROUP, args))["Statement"]}


def test_an_eks_node_pulls_images_and_serves_pod_identity_of_its_own_cluster_only() -> None:
    vm, eks = statements(None), statements("train-eks")
    assert set(eks) - set(vm) == {"EcrLogin", "PullImagesFromEcr", "PodIdentityAgentOfOwnCluster", "NodeNameFromEc2"}
    assert {sid: eks[sid] for sid in vm} == vm  # the node check's, metrics' and hooks' permissions stay
    assert eks["EcrLogin"]["Action"] == ["ecr:GetAuthorizationToken"]
    assert eks["PullImagesFromEcr"]["Action"] == ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    assert eks["PullImagesFromEcr"]["Resource"] == "arn:aws:ecr:*:*:repository/*"
    assert eks["PodIdentityAgentOfOwnCluster"] == {
        "Sid": "PodIdentityAgentOfOwnCluster", "Effect": "Allow", "Action": ["eks-auth:AssumeRoleForPodIdentity"],
        "Resource": f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/train-eks"}


def test_an_eks_node_holds_no_workload_permission() -> None:
    actions = [a for s in statements("train-eks").values() for a in s["Action"]]
    assert not [a for a in actions if a.startswith(("ec2:AssignPrivateIp", "ec2:CreateNetworkInterface",
                                                    "ec2:AttachNetworkInterface", "ec2:ModifyNetworkInterface"))]
    autoscaling = {a for a in actions if a.startswith("autoscaling:")}
    assert autoscaling == {"autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat",
                           "autoscaling:SetInstanceHealth"}
    assert not any(a.endswith("*") for a in actions)


def test_the_eks_node_policy_passes_parliament() -> None:
    args = NodeIdentityArgs(account_id=ACCOUNT, region=REGION, log_group_arn=LOG_GROUP, group_names=["train-h100"],
                            eks_cluster="train-eks")
    findings = analyze_policy_string(node_policy_document(ACCOUNT, LOG_GROUP, args)).findings
    # parliament reports Resource "*" only on actions that have resource-level permissions: none of these.
    assert [(f.issue, f.detail) for f in findings] == []
