"""What an EKS node may do: the node role's EKS statements (image pulls, the Pod Identity agent of its own cluster),
through parliament, with no workload permission (no CNI, no autoscaling beyond the node check's). The network path
between nodes and control plane is the node group's self rules (tests/components/clouds/aws/test_eks_control_plane.py
checks the control plane carries the node group)."""

from __future__ import annotations

import json
from typing import Any

from parliament import analyze_policy_string

from components.clouds.aws.identity import NodeIdentityArgs, node_policy_document

ACCOUNT, REGION = "123456789012", "us-east-1"
LOG_GROUP = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/gpufleet/train/dev"


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
