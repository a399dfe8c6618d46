"""The EKS rules over resources a program registers with pulumi_aws 7.x under the offline engine: the inputs the
rules read (camelCase) and the dependencies they follow (an access entry's principal on its role) are the ones the
SDK and the engine produce, not hand-written ones."""

from __future__ import annotations

import json

import pulumi_aws as aws

from gpufleet.plan.engine import run_program
from gpufleet.plan.policy_runner import run_policies
from policies.aws.eks import RULES

KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _program(public_cidrs: list[str] | None, node_actions: list[str], admin: str) -> None:
    role = aws.iam.Role("nodes", name="train-nodes", assume_role_policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "ec2.amazonaws.com"}}]}))
    aws.iam.RolePolicy("node", role=role.name, policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": node_actions, "Resource": "*"}]}))
    cluster = aws.eks.Cluster(
        "train",
        role_arn="arn:aws:iam::111122223333:role/eks-cluster",
        vpc_config={"subnet_ids": ["subnet-1", "subnet-2"], "endpoint_private_access": True,
                    "endpoint_public_access": public_cidrs is not None, "public_access_cidrs": public_cidrs},
        encryption_config={"resources": ["secrets"], "provider": {"key_arn": KEY}},
        enabled_cluster_log_types=["api", "audit", "authenticator", "controllerManager", "scheduler"],
        access_config={"authentication_mode": "API"},
        bootstrap_self_managed_addons=False,
    )
    aws.eks.AccessEntry("nodes", cluster_name=cluster.name, principal_arn=role.arn, type="EC2_LINUX")
    aws.eks.AccessPolicyAssociation(
        "admin", cluster_name=cluster.name, principal_arn=admin,
        policy_arn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
        access_scope={"type": "cluster"})


def _violations(public_cidrs: list[str] | None, node_actions: list[str], admin: str) -> dict[str, str]:
    resources = run_program(lambda: _program(public_cidrs, node_actions, admin), {}, project="gpufleet",
                            stack="test", region="us-east-1", zones=["us-east-1a", "us-east-1b"])
    report = run_policies(resources, {}, [rule.policy for rule in RULES])
    return {v.policy: v.message for v in report.violations}


def test_a_well_built_control_plane_passes_every_eks_rule() -> None:
    assert _violations(None, ["cloudwatch:PutMetricData"], "arn:aws:iam::111122223333:role/PlatformAdmin") == {}


def test_the_rules_read_what_the_sdk_registers() -> None:
    found = _violations(["0.0.0.0/0"], ["ec2:CreateNetworkInterface"], "arn:aws:iam::111122223333:root")
    assert sorted(found) == ["aws-eks-endpoint-private", "aws-eks-no-wide-cluster-admin",
                             "aws-eks-node-role-no-workload-permissions"]
    assert "ec2:CreateNetworkInterface" in found["aws-eks-node-role-no-workload-permissions"]
