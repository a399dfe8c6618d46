"""KMS key policies as the engine records them: the cluster key and the image key, built by one builder,
name only service-linked roles that exist (or that the stack creates first), and the log group's ARN."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from conftest import SHIPPED_STACKS, of_type, read_cluster, write_stack

from components.plan.planner import PlanResult, plan_stack
from components.plan.record import RecordedResource

KEY = "aws:kms/key:Key"
SLR = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
ASG_ROLE = "role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
FLEET_ROLE = "role/aws-service-role/ec2fleet.amazonaws.com/AWSServiceRoleForEC2Fleet"


def cluster_plan(tmp_path: Path, group: dict[str, Any] | None = None, **changes: Any) -> PlanResult:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0].update(group or {})
    cluster.update(changes)
    return plan_stack(write_stack(tmp_path, "keys", cluster))



def statements(key: RecordedResource) -> list[dict[str, Any]]:
    return json.loads(key.inputs["policy"])["Statement"]


def account_of(key: RecordedResource) -> str:
    """The account the policy's own administration statement names."""
    root = next(s for s in statements(key) if s["Action"] == "kms:*")
    return root["Principal"]["AWS"].split(":")[4]


def role_grants(key: RecordedResource) -> dict[str, list[dict[str, Any]]]:
    """Statements per service-linked role principal (role/aws-service-role/...)."""
    grants: dict[str, list[dict[str, Any]]] = {}
    for statement in statements(key):
        principal = statement["Principal"].get("AWS", "")
        if ":role/aws-service-role/" in principal:
            grants.setdefault(principal.split(":", 5)[5], []).append(statement)
    return grants


def assert_launch_grants(grants: list[dict[str, Any]]) -> None:
    """What AWS documents for a service-linked role launching instances with volumes under a CMK."""
    use = next(s for s in grants if "Condition" not in s)
    assert use["Action"] == ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]
    grant = next(s for s in grants if "Condition" in s)
    assert grant["Action"] == "kms:CreateGrant"
    assert grant["Condition"] == {"Bool": {"kms:GrantIsForAWSResource": "true"}}


def test_cluster_key_waits_for_the_autoscaling_role_it_names(tmp_path: Path) -> None:
    plan = cluster_plan(tmp_path)
    (key,) = of_type(plan, KEY)
    (role,) = of_type(plan, SLR)
    assert role.inputs["awsServiceName"] == "autoscaling.amazonaws.com"
    assert role.urn in key.depends_on
    grants = role_grants(key)
    assert set(grants) == {ASG_ROLE}
    assert_launch_grants(grants[ASG_ROLE])


def test_fleet_group_adds_the_fleet_role_and_its_grants(tmp_path: Path) -> None:
    plan = cluster_plan(tmp_path, {"provisioner": "fleet"})
    (key,) = of_type(plan, KEY)
    roles = {r.inputs["awsServiceName"]: r for r in of_type(plan, SLR)}
    assert set(roles) == {"autoscaling.amazonaws.com", "ec2fleet.amazonaws.com"}
    assert {r.urn for r in roles.values()} <= set(key.depends_on)
    grants = role_grants(key)
    assert set(grants) == {ASG_ROLE, FLEET_ROLE}
    for role in grants.values():
        assert_launch_grants(role)


def test_existing_roles_are_named_but_not_created(tmp_path: Path) -> None:
    identity = {**read_cluster("aws-train-p5").get("identity", {}), "service_linked_roles": "exists"}
    plan = cluster_plan(tmp_path, identity=identity)
    assert plan.exit_code == 0
    assert not of_type(plan, SLR)
    assert set(role_grants(of_type(plan, KEY)[0])) == {ASG_ROLE}


def test_brought_key_creates_no_role(tmp_path: Path) -> None:
    plan = cluster_plan(tmp_path, storage={"kms_key": "arn:aws:kms:us-east-1:111122223333:key/abc"})
    assert not of_type(plan, KEY) and not of_type(plan, SLR)


def test_log_group_statement_is_scoped_to_the_log_groups_arn(tmp_path: Path) -> None:
    plan = cluster_plan(tmp_path)
    (key,) = of_type(plan, KEY)
    (log_group,) = of_type(plan, "aws:cloudwatch/logGroup:LogGroup")
    (logs,) = [s for s in statements(key) if s["Principal"].get("Service") == "logs.us-east-1.amazonaws.com"]
    arn = f"arn:aws:logs:us-east-1:{account_of(key)}:log-group:{log_group.inputs['name']}"
    assert logs["Condition"] == {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": arn}}
    assert logs["Action"] == ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]


def images_plan(tmp_path: Path, **changes: Any) -> PlanResult:
    document = yaml.safe_load((SHIPPED_STACKS / "Pulumi.aws-images.yaml").read_text())
    document["config"]["gpufleet:images"].update(changes)
    path = tmp_path / "Pulumi.images-variant.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return plan_stack(path, SHIPPED_STACKS)


def test_image_key_and_replicas_let_groups_and_fleets_launch_the_amis(tmp_path: Path) -> None:
    plan = images_plan(tmp_path)
    (key,) = of_type(plan, KEY)
    replicas = of_type(plan, "aws:kms/replicaKey:ReplicaKey")
    assert replicas, "the shipped images stack copies to a second region"
    roles = {r.inputs["awsServiceName"]: r.urn for r in of_type(plan, SLR)}
    assert set(roles) == {"autoscaling.amazonaws.com", "ec2fleet.amazonaws.com"}
    for each in (key, *replicas):
        assert set(roles.values()) <= set(each.depends_on)
        grants = role_grants(each)
        assert set(grants) == {ASG_ROLE, FLEET_ROLE}
        for role in grants.values():
            assert_launch_grants(role)


def test_image_key_grants_match_the_cluster_keys(tmp_path: Path) -> None:
    """One builder: the autoscaling statements of both keys are the same."""
    image_key = of_type(images_plan(tmp_path), KEY)[0]
    cluster_key = of_type(cluster_plan(tmp_path), KEY)[0]
    assert role_grants(image_key)[ASG_ROLE] == role_grants(cluster_key)[ASG_ROLE]


def test_images_stack_with_existing_roles_creates_none(tmp_path: Path) -> None:
    plan = images_plan(tmp_path, service_linked_roles="exists")
    assert not of_type(plan, SLR)
    assert set(role_grants(of_type(plan, KEY)[0])) == {ASG_ROLE, FLEET_ROLE}
