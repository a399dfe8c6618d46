"""KMS key policies as the engine records them: the cluster key and the image key, built by one builder,
name only service-linked roles that exist (or that the stack creates first), and the log group's ARN."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from conftest import SHIPPED_STACKS, of_type, read_cluster, shipped_plan, write_stack

from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.record import RecordedResource
from gpufleet.stackfile import SpecInvalid

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


# aws-train-p5: name train, environment dev, and the hash of its region (role names are account-wide).
OWN_SUFFIX = re.compile(r"train-dev-[0-9a-f]{8}")


def own_asg_role(plan: PlanResult) -> str:
    """The cluster's own Auto Scaling role name, read from the role the plan creates."""
    (role,) = of_type(plan, SLR)
    assert OWN_SUFFIX.fullmatch(role.inputs["customSuffix"])
    return f"{ASG_ROLE}_{role.inputs['customSuffix']}"


def pattern_grants(key: RecordedResource) -> dict[str, list[dict[str, Any]]]:
    """Statements admitting service-linked roles by ARN condition, per aws:PrincipalArn pattern."""
    grants: dict[str, list[dict[str, Any]]] = {}
    for statement in statements(key):
        if statement["Principal"].get("AWS") == "*":
            condition = statement["Condition"]
            assert condition["StringEquals"] == {"kms:CallerAccount": account_of(key)}
            grants.setdefault(condition["ArnLike"]["aws:PrincipalArn"].split(":", 5)[5], []).append(statement)
    return grants


def without_account_conditions(statement: dict[str, Any]) -> dict[str, Any]:
    """The statement less the conditions that admit the role by ARN (pattern_grants checked them)."""
    rest = {k: v for k, v in statement["Condition"].items() if k not in ("StringEquals", "ArnLike")}
    return {k: v for k, v in statement.items() if k != "Condition"} | ({"Condition": rest} if rest else {})


def test_default_creates_the_clusters_own_suffixed_autoscaling_role_and_its_groups_use_it(tmp_path: Path) -> None:
    # CreateServiceLinkedRole refuses AWSServiceRoleForAutoScaling where it exists (most used accounts); a
    # suffixed role of this cluster's own is new in both a new and a used account.
    plan = cluster_plan(tmp_path)
    (key,) = of_type(plan, KEY)
    (role,) = of_type(plan, SLR)
    assert role.inputs["awsServiceName"] == "autoscaling.amazonaws.com"
    own = own_asg_role(plan)
    assert role.urn in key.depends_on
    grants = role_grants(key)
    assert set(grants) == {own}
    assert_launch_grants(grants[own])
    (asg,) = of_type(plan, "aws:autoscaling/group:Group")
    assert asg.inputs["serviceLinkedRoleArn"].endswith(own)
    assert role.urn in asg.depends_on


def test_fleet_group_admits_the_fleet_role_by_arn_without_creating_it(tmp_path: Path) -> None:
    plan = cluster_plan(tmp_path, {"provisioner": "fleet"})
    (key,) = of_type(plan, KEY)
    own_asg_role(plan)  # the cluster's own Auto Scaling role only: the fleet role is never created
    patterns = pattern_grants(key)
    assert set(patterns) == {FLEET_ROLE}  # EC2 Fleet takes no suffix: admitted whether or not it exists
    assert_launch_grants([without_account_conditions(s) for s in patterns[FLEET_ROLE]])


def test_create_makes_the_account_roles_first(tmp_path: Path) -> None:
    identity = {**read_cluster("aws-train-p5").get("identity", {}), "service_linked_roles": "create"}
    plan = cluster_plan(tmp_path, {"provisioner": "fleet"}, identity=identity)
    (key,) = of_type(plan, KEY)
    roles = {r.inputs["awsServiceName"]: r for r in of_type(plan, SLR)}
    assert set(roles) == {"autoscaling.amazonaws.com", "ec2fleet.amazonaws.com"}
    assert not [r for r in roles.values() if r.inputs.get("customSuffix")]
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
    assert "serviceLinkedRoleArn" not in of_type(plan, "aws:autoscaling/group:Group")[0].inputs


def test_no_shipped_stack_creates_an_unsuffixed_service_linked_role() -> None:
    for stack in ("aws-train-p5", "aws-infer-g6e", "aws-images"):
        plan = shipped_plan(stack)
        assert plan.exit_code == 0
        assert all(r.inputs.get("customSuffix") for r in of_type(plan, SLR)), stack


def test_the_own_role_fits_iam_for_the_longest_cluster_name_and_differs_per_region(tmp_path: Path) -> None:
    # Role names are unique in the whole account: a 32-character name in staging (29 + 41 characters unfitted)
    # is cut to IAM's 64 with the region's hash, and the same cluster in another region gets another role.
    suffixes = []
    for region in ("us-east-1", "us-west-2"):
        network = {**read_cluster("aws-train-p5")["network"], "zones": [f"{region}a"]}
        (tmp_path / region).mkdir()
        plan = cluster_plan(tmp_path / region, name="a" * 32, environment="staging", region=region, network=network)
        (role,) = of_type(plan, SLR)
        suffixes.append(role.inputs["customSuffix"])
        assert len(f"AWSServiceRoleForAutoScaling_{role.inputs['customSuffix']}") <= 64
    assert suffixes[0] != suffixes[1]


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
    document = libyaml_files.load((SHIPPED_STACKS / "Pulumi.aws-images.yaml").read_text())
    document["config"]["gpufleet:images"].update(changes)
    path = tmp_path / "Pulumi.images-variant.yaml"
    path.write_text(libyaml_files.dump(document, sort_keys=False))
    return plan_stack(path, SHIPPED_STACKS)


def test_image_key_and_replicas_admit_every_clusters_launch_roles_without_creating_any(tmp_path: Path) -> None:
    plan = images_plan(tmp_path)
    (key,) = of_type(plan, KEY)
    replicas = of_type(plan, "aws:kms/replicaKey:ReplicaKey")
    assert replicas, "the shipped images stack copies to a second region"
    assert not of_type(plan, SLR)
    for each in (key, *replicas):
        assert not role_grants(each)
        patterns = pattern_grants(each)
        # The default role and every suffixed one (each cluster's own), and the fleet role.
        assert set(patterns) == {f"{ASG_ROLE}*", FLEET_ROLE}


def test_image_key_grants_match_the_cluster_keys(tmp_path: Path) -> None:
    """One builder: the launch statements of both keys carry the same actions."""
    image_key = of_type(images_plan(tmp_path), KEY)[0]
    cluster = cluster_plan(tmp_path)
    cluster_key = of_type(cluster, KEY)[0]
    image = sorted(json.dumps(s["Action"]) for s in pattern_grants(image_key)[f"{ASG_ROLE}*"])
    assert image == sorted(json.dumps(s["Action"]) for s in role_grants(cluster_key)[own_asg_role(cluster)])


def test_images_stack_refuses_the_old_roles_field(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid) as caught:
        images_plan(tmp_path, service_linked_roles="exists")
    assert "service_linked_roles" in str(caught.value)
