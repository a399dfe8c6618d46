"""The EKS control plane a `scheduler: kubernetes` AWS stack registers: the cluster on the stack key with its log group
made first, every log type, access entries only, no self-managed add-ons, the endpoint private unless ranged public;
who reaches the API (admins, the deployer, the node role); and a VM stack that registers none of it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import of_type, one, read_cluster, shipped_plan, without_job_operators, write_stack

from gpufleet.clouds.aws import mock_answers
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.stackfile import SpecInvalid

CLUSTER = "aws:eks/cluster:Cluster"
ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
ADMIN = "arn:aws:iam::123456789012:role/platform-admins"
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


def eks_cluster(**scheduler: Any) -> dict[str, Any]:
    """The shipped aws-train-eks, named train, with an admin and the given scheduler settings (no job operators: this
    is the control plane)."""
    cluster = {**copy.deepcopy(read_cluster("aws-train-eks")), "name": "train"}
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.35", "admins": [ADMIN], **scheduler}
    return without_job_operators(cluster)


def plan_of(directory: Path, cluster: dict[str, Any]) -> PlanResult:
    return plan_stack(write_stack(directory, "eks", cluster))


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    return plan_of(tmp_path_factory.mktemp("eks"), eks_cluster())


def urn(plan: PlanResult, typ: str, name: str) -> str:
    (found,) = [r.urn for r in plan.resources if r.type == typ and r.name == name]
    return found


def deployer() -> str:
    """The role behind the identity the offline engine runs as (its getSessionContext answer)."""
    caller = mock_answers.invoke("aws:index/getCallerIdentity:getCallerIdentity", "us-east-1", [])
    context = mock_answers.invoke("aws:iam/getSessionContext:getSessionContext", "us-east-1", [])
    assert caller is not None and context is not None and caller["arn"] == context["arn"]
    return context["issuerArn"]


def test_the_cluster_runs_the_stack_version_with_every_log_type_and_no_self_managed_addons(plan: PlanResult) -> None:
    cluster = one(plan, CLUSTER)
    assert cluster.inputs["name"] == "gpufleet-train-dev"
    assert cluster.inputs["version"] == "1.35"
    assert cluster.inputs["enabledClusterLogTypes"] == LOG_TYPES
    assert cluster.inputs["bootstrapSelfManagedAddons"] is False
    assert cluster.inputs["accessConfig"] == {"authenticationMode": "API",
                                              "bootstrapClusterCreatorAdminPermissions": False}
    assert cluster.protect is False and cluster.inputs["deletionProtection"] is False


def test_secrets_are_encrypted_with_the_stack_key(plan: PlanResult) -> None:
    cluster = one(plan, CLUSTER)
    key = urn(plan, "aws:kms/key:Key", "train-key")
    assert cluster.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert cluster.property_dependencies["encryptionConfig"] == (key,)


def test_the_control_plane_log_group_is_on_the_key_and_made_before_the_cluster(plan: PlanResult) -> None:
    groups = {r.inputs["name"]: r for r in of_type(plan, LOG_GROUP)}
    log_group = groups["/aws/eks/gpufleet-train-dev/cluster"]  # the name EKS writes to
    assert log_group.inputs["retentionInDays"] == groups["/gpufleet/train/dev"].inputs["retentionInDays"]
    assert log_group.property_dependencies["kmsKeyId"] == (urn(plan, "aws:kms/key:Key", "train-key"),)
    assert log_group.urn in one(plan, CLUSTER).depends_on


def test_the_key_lets_cloudwatch_logs_encrypt_both_log_groups(plan: PlanResult) -> None:
    policy = json.loads(one(plan, "aws:kms/key:Key").inputs["policy"])
    (logs,) = [s for s in policy["Statement"] if s["Sid"] == "LogGroupUsesKey"]
    arns = logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    assert sorted(a.split(":log-group:")[1] for a in arns) == ["/aws/eks/gpufleet-train-dev/cluster",
                                                               "/gpufleet/train/dev"]


def test_the_control_plane_role_is_eks_s_with_the_cluster_policy(plan: PlanResult) -> None:
    cluster = one(plan, CLUSTER)
    role = next(r for r in of_type(plan, "aws:iam/role:Role") if r.name == "train-eks-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert [s["Principal"] for s in trust["Statement"]] == [{"Service": "eks.amazonaws.com"}]
    assert cluster.property_dependencies["roleArn"] == (role.urn,)
    attachment = next(r for r in of_type(plan, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                      if r.name == "train-eks-role")
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"
    assert attachment.urn in cluster.depends_on


def test_the_endpoint_is_private_in_the_private_subnets_by_default(plan: PlanResult) -> None:
    cluster = one(plan, CLUSTER)
    vpc = cluster.inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in vpc
    subnets = {r.urn for r in of_type(plan, "aws:ec2/subnet:Subnet") if "private" in r.name}
    assert subnets and subnets <= set(cluster.property_dependencies["vpcConfig"])
    assert len(vpc["subnetIds"]) == len(subnets)


def test_a_public_endpoint_answers_only_the_named_ranges(tmp_path: Path) -> None:
    cluster = eks_cluster(endpoint="public", public_cidrs=["203.0.113.0/24"])
    vpc = one(plan_of(tmp_path, cluster), CLUSTER).inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["endpointPrivateAccess"] is True
    assert vpc["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_a_prod_cluster_is_protected(tmp_path: Path) -> None:
    cluster = eks_cluster()
    cluster["environment"] = "prod"
    registered = one(plan_of(tmp_path, cluster), CLUSTER)
    assert registered.protect is True and registered.inputs["deletionProtection"] is True


def test_each_admin_and_the_deployer_get_cluster_admin_and_nothing_else(plan: PlanResult) -> None:
    standard = {r.inputs["principalArn"]: r for r in of_type(plan, ENTRY) if r.inputs["type"] == "STANDARD"}
    assert set(standard) == {ADMIN, deployer()}
    associations = of_type(plan, ASSOCIATION)
    assert {a.inputs["principalArn"] for a in associations} == set(standard)
    for association in associations:
        assert association.inputs["policyArn"] == ADMIN_POLICY
        assert association.inputs["accessScope"] == {"type": "cluster"}
        entry = standard[association.inputs["principalArn"]]
        assert association.property_dependencies["principalArn"] == (entry.urn,)
    cluster = urn(plan, CLUSTER, "train-eks")
    assert all(r.property_dependencies["clusterName"] == (cluster,) for r in [*standard.values(), *associations])


def test_the_node_role_joins_as_ec2_linux_without_an_access_policy(plan: PlanResult) -> None:
    (node,) = [r for r in of_type(plan, ENTRY) if r.inputs["type"] == "EC2_LINUX"]
    role = urn(plan, "aws:iam/role:Role", "train-node-role")
    assert node.property_dependencies["principalArn"] == (role,)
    assert node.inputs["principalArn"] not in {a.inputs["principalArn"] for a in of_type(plan, ASSOCIATION)}


def test_an_admin_listed_twice_or_running_the_deploy_gets_one_entry(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, eks_cluster(admins=[ADMIN, ADMIN, deployer()]))
    principals = [r.inputs["principalArn"] for r in of_type(plan, ENTRY) if r.inputs["type"] == "STANDARD"]
    assert sorted(principals) == sorted({ADMIN, deployer()})


def test_a_brought_instance_profile_is_refused_naming_the_field(tmp_path: Path) -> None:
    cluster = eks_cluster()
    cluster.setdefault("identity", {})["instance_profile_arn"] = "arn:aws:iam::123456789012:instance-profile/gpu-nodes"
    with pytest.raises(SpecInvalid, match=r"identity\.instance_profile_arn: .*EC2_LINUX"):
        plan_of(tmp_path, cluster)


def test_a_vm_stack_registers_no_kubernetes_resource() -> None:
    plan = shipped_plan("aws-train-p5")
    assert not [r.type for r in plan.resources if r.type.startswith(("aws:eks", "kubernetes:", "pulumi:providers:k"))]
    policy = json.loads(one(plan, "aws:kms/key:Key").inputs["policy"])
    (logs,) = [s for s in policy["Statement"] if s["Sid"] == "LogGroupUsesKey"]
    assert isinstance(logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"], str)


def name_inputs(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, value) of every text input whose key ends in `name`, paths as clouds/aws/names.py writes them."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in name_inputs(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        return [found for item in value for found in name_inputs(item, f"{path}[]")]
    last = path.rsplit(".", 1)[-1].removesuffix("[]")
    return [(path, value)] if isinstance(value, str) and last.lower().endswith("name") else []


def test_every_aws_name_of_a_32_character_eks_cluster_has_a_row_and_fits(tmp_path: Path) -> None:
    """The Kubernetes objects' names are checked by the API server's schemas (the in-cluster tests); every AWS name
    the EKS steps give is in the names table and fits its rule, the cluster's longest name included."""
    from gpufleet.clouds.aws.names import NAMES

    cluster = eks_cluster()
    cluster["name"] = "research-train-eastus2-abcdefghi"  # 32 characters: the most a cluster name takes
    plan = plan_of(tmp_path, cluster)
    checked = []
    for resource in (r for r in plan.resources if r.type.startswith("aws:")):
        for path, value in name_inputs(resource.inputs):
            rule = NAMES.rule(resource.type, path)
            assert rule is not None or (resource.type, path) in NAMES.not_created, (resource.type, path)
            if rule is not None:
                assert rule.problems(value) == [], (resource.type, path, value)
                checked.append((resource.type, path))
    assert ("aws:eks/cluster:Cluster", "name") in checked


def test_the_control_plane_interfaces_carry_the_node_security_group(plan: PlanResult) -> None:
    """The node group admits all traffic from itself: nodes and the API server reach each other through it."""
    cluster = one(plan, CLUSTER)
    nodes = next(r for r in of_type(plan, "aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("-nodes"))
    assert len(cluster.inputs["vpcConfig"]["securityGroupIds"]) == 1
    assert nodes.urn in cluster.property_dependencies["vpcConfig"]
    assert any(rule.get("self") is True and rule["protocol"] == "-1" for rule in nodes.inputs["ingress"])
