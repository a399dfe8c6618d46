"""AWS EKS rules: each fails the bad input and passes the good one, offline through the project's policy runner
(camelCase inputs, as the engine hands pulumi_aws 7.x's EKS and IAM inputs to the pack)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from stack_rule_args import messages, res, urn

CLUSTER = "aws:eks/cluster:Cluster"
ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
POLICY = "aws:iam/policy:Policy"
KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ALL_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def good_cluster(**change: Any) -> dict[str, Any]:
    inputs = {
        "name": "train",
        "encryptionConfig": {"resources": ["secrets"], "provider": {"keyArn": KEY}},
        "vpcConfig": {"subnetIds": ["subnet-1", "subnet-2"], "endpointPrivateAccess": True,
                      "endpointPublicAccess": False},
        "enabledClusterLogTypes": list(ALL_LOGS),
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
        "bootstrapSelfManagedAddons": False,
    }
    inputs.update(change)
    return inputs


def cluster_messages(rule: str, **change: Any) -> list[str]:
    return [message for _, message in messages(rule, [res(CLUSTER, "train", good_cluster(**change))])]


@pytest.mark.parametrize("rule", ["aws-eks-secrets-encrypted", "aws-eks-endpoint-private",
                                  "aws-eks-control-plane-logs", "aws-eks-access-entries-only"])
def test_a_well_built_cluster_passes(rule: str) -> None:
    assert cluster_messages(rule) == []


@pytest.mark.parametrize("encryption", [
    None,
    {"resources": [], "provider": {"keyArn": KEY}},
    {"resources": ["secrets"], "provider": {}},
])
def test_secrets_without_a_customer_key_fail(encryption: dict[str, Any] | None) -> None:
    (message,) = cluster_messages("aws-eks-secrets-encrypted", encryptionConfig=encryption)
    assert "not encrypted with a customer key" in message and "encryption_config" in message


def test_secrets_on_an_aws_managed_alias_fail() -> None:
    alias = "arn:aws:kms:us-east-1:111122223333:alias/aws/eks"
    (message,) = cluster_messages("aws-eks-secrets-encrypted",
                                  encryptionConfig={"resources": ["secrets"], "provider": {"keyArn": alias}})
    assert "AWS managed alias" in message


@pytest.mark.parametrize(("vpc", "words"), [
    ({"subnetIds": ["subnet-1"]}, "0.0.0.0/0 (the EKS default)"),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}, "0.0.0.0/0"),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}, "more than a /24"),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["198.51.100.0/22"]}, "more than a /24"),
])
def test_a_public_endpoint_open_too_wide_fails(vpc: dict[str, Any], words: str) -> None:
    (message,) = cluster_messages("aws-eks-endpoint-private", vpcConfig=vpc)
    assert "the API server endpoint is public" in message and words in message


@pytest.mark.parametrize("cidrs", [["203.0.113.0/24"], ["203.0.113.0/25", "198.51.100.0/25"], ["10.0.0.0/8"]])
def test_a_public_endpoint_for_named_ranges_passes(cidrs: list[str]) -> None:
    assert cluster_messages("aws-eks-endpoint-private",
                            vpcConfig={"endpointPublicAccess": True, "publicAccessCidrs": cidrs}) == []


@pytest.mark.parametrize(("logs", "missing"), [
    (None, "api, audit, authenticator, controllerManager, scheduler"),
    (["api", "audit"], "authenticator, controllerManager, scheduler"),
])
def test_missing_log_types_fail(logs: list[str] | None, missing: str) -> None:
    (message,) = cluster_messages("aws-eks-control-plane-logs", enabledClusterLogTypes=logs)
    assert f"control-plane log types {missing} are off" in message


@pytest.mark.parametrize(("access", "words"), [
    (None, "not set (the EKS API's default is CONFIG_MAP)"),
    ({"authenticationMode": "API_AND_CONFIG_MAP"}, "'API_AND_CONFIG_MAP'"),
    ({"authenticationMode": "CONFIG_MAP"}, "'CONFIG_MAP'"),
])
def test_config_map_authentication_fails(access: dict[str, Any] | None, words: str) -> None:
    (message,) = cluster_messages("aws-eks-access-entries-only", accessConfig=access)
    assert words in message and "access entries only" in message


def association(principal: str, policy: str = CLUSTER_ADMIN) -> list:
    return [res(ASSOCIATION, "admin", {"clusterName": "train", "policyArn": policy, "principalArn": principal,
                                       "accessScope": {"type": "cluster"}})]


@pytest.mark.parametrize(("principal", "words"), [
    ("arn:aws:iam::111122223333:root", "account root"),
    ("*", "wildcard principal"),
    ("arn:aws:iam::111122223333:role/*", "wildcard principal"),
])
def test_cluster_admin_for_root_or_wildcard_fails(principal: str, words: str) -> None:
    (found,) = messages("aws-eks-no-wide-cluster-admin", association(principal))
    assert found[0] == urn(ASSOCIATION, "admin")
    assert "AmazonEKSClusterAdminPolicy" in found[1] and words in found[1]


def test_namespaced_admin_policy_for_root_fails_too() -> None:
    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy"
    (found,) = messages("aws-eks-no-wide-cluster-admin", association("arn:aws:iam::111122223333:root", policy))
    assert "AmazonEKSAdminPolicy" in found[1]


@pytest.mark.parametrize(("principal", "policy"), [
    ("arn:aws:iam::111122223333:role/PlatformAdmin", CLUSTER_ADMIN),
    ("arn:aws:iam::111122223333:root", "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"),
])
def test_named_admins_and_view_access_pass(principal: str, policy: str) -> None:
    assert messages("aws-eks-no-wide-cluster-admin", association(principal, policy)) == []


def doc(*actions: str) -> str:
    return json.dumps({"Version": "2012-10-17",
                       "Statement": [{"Effect": "Allow", "Action": list(actions), "Resource": "*"}]})


def node_stack(*extra, entry_type: str = "EC2_LINUX", inline: list | None = None) -> list:
    """An EKS node role (the principal of an EC2_LINUX access entry) with the actions a node needs, plus extra."""
    role = res(ROLE, "nodes", {"name": "train-nodes", "assumeRolePolicy": "{}",
                               "inlinePolicies": inline or [{"name": "node", "policy": doc(
                                   "autoscaling:CompleteLifecycleAction", "cloudwatch:PutMetricData")}]})
    entry = res(ENTRY, "nodes", {"clusterName": "train", "type": entry_type, "principalArn": "arn"},
                depends_on=(role.urn,), property_dependencies={"principalArn": (role.urn,)})
    return [role, entry, *extra]


def role_policy(*actions: str) -> Any:
    return res(ROLE_POLICY, "extra", {"role": "train-nodes", "policy": doc(*actions)},
               depends_on=(urn(ROLE, "nodes"),), property_dependencies={"role": (urn(ROLE, "nodes"),)})


def test_a_node_role_with_node_actions_only_passes() -> None:
    assert messages("aws-eks-node-role-no-workload-permissions", node_stack()) == []


@pytest.mark.parametrize("actions", [("ec2:AssignPrivateIpAddresses",), ("ec2:CreateNetworkInterface",),
                                     ("autoscaling:SetDesiredCapacity",), ("ec2:*",), ("autoscaling:Set*",)])
def test_workload_actions_in_a_role_policy_fail(actions: tuple[str, ...]) -> None:
    (found,) = messages("aws-eks-node-role-no-workload-permissions", node_stack(role_policy(*actions)))
    assert found[0] == urn(ROLE, "nodes")
    assert "role policy extra statement 1 allows workload actions" in found[1] and "Pod Identity" in found[1]


def test_workload_actions_inline_fail() -> None:
    inline = [{"name": "cni", "policy": doc("ec2:DescribeInstances", "ec2:AttachNetworkInterface")}]
    (found,) = messages("aws-eks-node-role-no-workload-permissions", node_stack(inline=inline))
    assert "inline_policies[0] statement 1 allows workload actions ec2:AttachNetworkInterface" in found[1]


def test_the_cni_managed_policy_attached_fails() -> None:
    attachment = res(ATTACHMENT, "cni", {"role": "train-nodes",
                                         "policyArn": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"},
                     property_dependencies={"role": (urn(ROLE, "nodes"),)})
    (found,) = messages("aws-eks-node-role-no-workload-permissions", node_stack(attachment))
    assert "AmazonEKS_CNI_Policy attached" in found[1]


def test_a_stack_policy_attached_with_autoscaler_actions_fails() -> None:
    policy = res(POLICY, "scaler", {"policy": doc("autoscaling:TerminateInstanceInAutoScalingGroup")})
    attachment = res(ATTACHMENT, "scaler", {"role": "train-nodes", "policyArn": "arn"},
                     property_dependencies={"role": (urn(ROLE, "nodes"),), "policyArn": (policy.urn,)})
    (found,) = messages("aws-eks-node-role-no-workload-permissions", node_stack(policy, attachment))
    assert "attached policy scaler statement 1 allows workload actions" in found[1]


def test_a_role_found_by_its_arn_when_no_dependency_is_recorded() -> None:
    role = res(ROLE, "nodes", {"name": "train-nodes", "inlinePolicies": [
        {"name": "cni", "policy": doc("ec2:UnassignPrivateIpAddresses")}]})
    entry = res(ENTRY, "nodes", {"type": "EC2_LINUX", "principalArn": "arn:aws:iam::111122223333:role/train-nodes"})
    (found,) = messages("aws-eks-node-role-no-workload-permissions", [role, entry])
    assert found[0] == role.urn


def test_workload_roles_are_not_node_roles() -> None:
    # The CNI's own role (a STANDARD entry or none at all) may hold the CNI actions.
    inline = [{"name": "cni", "policy": doc("ec2:AssignPrivateIpAddresses")}]
    assert messages("aws-eks-node-role-no-workload-permissions",
                    node_stack(entry_type="STANDARD", inline=inline)) == []
