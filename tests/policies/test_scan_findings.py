"""The gaps an independent scan (Checkov over the converted plans) found, closed in what the program registers:
VPC flow logs and an emptied default security group on created VPCs, log retention as a stack option checked
against what each cloud accepts, and the Image Builder component on the recipe's key."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import botocore  # parliament's dependency (dev extra): the CloudWatch Logs service model
import pytest
from conftest import of_type, one, read_cluster, write_stack
from conftest import shipped_plan as shipped
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.catalog import load_catalog
from gpufleet.plan.planner import PlanResult, plan_stack

VPC = "aws:ec2/vpc:Vpc"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def variant(tmp_path: Path, stack: str, **changes: Any) -> PlanResult:
    cluster = copy.deepcopy(read_cluster(stack))
    for path, value in changes.items():
        *parents, key = path.split("__")
        node = cluster
        for parent in parents:
            node = node.setdefault(parent, {})
        node[key] = value
    return plan_stack(write_stack(tmp_path, "variant", cluster))


def named(plan: PlanResult, typ: str, suffix: str) -> Any:
    (found,) = [r for r in of_type(plan, typ) if r.name.endswith(suffix)]
    return found


def test_created_vpc_has_a_flow_log_of_all_traffic_into_the_cluster_log_group() -> None:
    plan = shipped("aws-train-p5")
    vpc, group, flow = one(plan, VPC), one(plan, LOG_GROUP), one(plan, FLOW_LOG)
    assert flow.inputs["trafficType"] == "ALL" and flow.inputs["logDestinationType"] == "cloud-watch-logs"
    assert flow.property_dependencies["vpcId"] == (vpc.urn,)
    assert flow.property_dependencies["logDestination"] == (group.urn,)
    role = named(plan, ROLE, "-flow-logs")
    assert flow.property_dependencies["iamRoleArn"] == (role.urn,)
    # The log group the flow log writes to is the cluster's, on the stack key.
    key = one(plan, "aws:kms/key:Key")
    assert group.property_dependencies["kmsKeyId"] == (key.urn,)
    group_arn = f"arn:aws:logs:us-east-1:123456789012:log-group:{group.inputs['name']}"
    # ... and that key lets CloudWatch Logs encrypt for exactly that group (key_policy.py LogGroupUsesKey).
    (logs,) = [s for s in json.loads(key.inputs["policy"])["Statement"] if s["Sid"] == "LogGroupUsesKey"]
    assert logs["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    assert logs["Condition"] == {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": group_arn}}
    # Only the flow logs service of this account, for a flow log of this account and region, assumes the role.
    (trust,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {"aws:SourceArn": "arn:aws:ec2:us-east-1:123456789012:vpc-flow-log/*"},
    }
    # Its permissions name the one group and its streams, nothing else.
    policy = named(plan, ROLE_POLICY, "-flow-logs")
    assert policy.property_dependencies["role"] == (role.urn,)
    statement, listing = json.loads(policy.inputs["policy"])["Statement"]
    assert statement["Resource"] == [group_arn, f"{group_arn}:*"]
    assert sorted(statement["Action"]) == sorted([
        "logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"])
    # DescribeLogGroups takes no resource scope (parliament's IAM data: resource "*"): alone, listing only.
    assert listing["Action"] == ["logs:DescribeLogGroups"] and listing["Resource"] == "*"
    assert policy.urn in flow.depends_on


def test_created_vpc_default_security_group_is_managed_with_no_rules() -> None:
    for stack in ("aws-train-p5", "aws-infer-g6e"):
        plan = shipped(stack)
        default = one(plan, "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
        assert default.property_dependencies["vpcId"] == (one(plan, VPC).urn,)
        assert "ingress" not in default.inputs and "egress" not in default.inputs


def test_a_brought_vpc_keeps_its_own_flow_logs_and_default_group(tmp_path: Path) -> None:
    plan = variant(tmp_path, "aws-infer-g6e", network={
        "vpc_id": "vpc-0123456789abcdef0", "subnet_ids": ["subnet-0123456789abcdef0"],
        "zones": read_cluster("aws-infer-g6e")["network"]["zones"][:1]})
    assert not of_type(plan, VPC) and not of_type(plan, FLOW_LOG)
    assert not of_type(plan, "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")


def test_log_retention_defaults_to_30_days_and_follows_the_stack(tmp_path: Path) -> None:
    assert one(shipped("aws-train-p5"), LOG_GROUP).inputs["retentionInDays"] == 30
    plan = variant(tmp_path, "aws-train-p5", monitoring__log_retention_days=365)
    assert one(plan, LOG_GROUP).inputs["retentionInDays"] == 365
    store = "alicloud:log/store:Store"
    assert one(shipped("alicloud-infer-gn7i"), store).inputs["retentionPeriod"] == 30
    plan = variant(tmp_path, "alicloud-infer-gn7i", monitoring__log_retention_days=3650)
    assert one(plan, store).inputs["retentionPeriod"] == 3650


def cli_plan(stacks_dir: Path, stack: str, days: int) -> tuple[int, str]:
    cluster = read_cluster(stack)
    cluster.setdefault("monitoring", {})["log_retention_days"] = days
    write_stack(stacks_dir, "retention", cluster)
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "retention", "--stacks-dir", str(stacks_dir)])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("stack", "days", "message"),
    [
        ("aws-train-p5", 31, "monitoring.log_retention_days: aws does not accept 31 days; use one of 1,3,5,7,14,30,"),
        ("aws-train-p5", 0, "monitoring.log_retention_days: Input should be greater than or equal to 1"),
        ("alicloud-infer-gn7i", 3651, "monitoring.log_retention_days: alicloud does not accept 3651 days; use one "
                                      "of 1-3650"),
        ("azure-train-ndh100", 30, "monitoring.log_retention_days: gpufleet creates no log store on azure"),
    ],
)
def test_a_retention_the_cloud_refuses_exits_2_naming_the_field(
    stacks_dir: Path, stack: str, days: int, message: str
) -> None:
    code, output = cli_plan(stacks_dir, stack, days)
    assert code == 2 and message in " ".join(output.split()) and "Traceback" not in output


def test_the_catalogs_cloudwatch_retention_values_are_the_apis() -> None:
    # The CloudWatch Logs service model botocore ships: PutRetentionPolicy's retentionInDays shape lists them.
    model = Path(botocore.__file__).parent / "data" / "logs" / "2014-03-28" / "service-2.json.gz"
    text = json.loads(gzip.decompress(model.read_bytes()))["shapes"]["Days"]["documentation"]
    listed = text.split("Possible values are: ", 1)[1].split(".", 1)[0].replace(" and ", " ")
    api = [int(v) for v in listed.replace(",", " ").split()]
    catalog = [int(v) for v in str(load_catalog().limit("aws", "log_retention_days")).split(",")]
    assert catalog == api and 30 in catalog


def test_image_builder_component_is_encrypted_with_the_recipes_key() -> None:
    plan = shipped("aws-images")
    recipe = one(plan, "aws:imagebuilder/imageRecipe:ImageRecipe")
    (mapping,) = recipe.inputs["blockDeviceMappings"]
    components = of_type(plan, "aws:imagebuilder/component:Component")
    assert components  # the installer's parts, one component each: every one on the recipe's key
    for component in components:
        assert component.inputs["kmsKeyId"] == mapping["ebs"]["kmsKeyId"]
        assert component.property_dependencies["kmsKeyId"] == recipe.property_dependencies["blockDeviceMappings"]


def test_the_lustre_key_expires_after_it_rotates_and_warns_before() -> None:
    plan = shipped("azure-train-ndh100")
    (key,) = [k for k in of_type(plan, "azure-native:keyvault:Key") if k.inputs["keyName"] == "gpufleet-lustre"]
    policy = key.inputs["properties"]["rotationPolicy"]
    assert policy["attributes"] == {"expiryTime": "P2Y"}
    assert policy["lifetimeActions"] == [
        {"action": {"type": "rotate"}, "trigger": {"timeAfterCreate": "P1Y"}},
        {"action": {"type": "notify"}, "trigger": {"timeBeforeExpiry": "P30D"}},
    ]
    # The file system names the version it was made with: it does not follow rotations by itself.
    fs = one(plan, "azure-native:storagecache:AmlFilesystem")
    assert key.urn in fs.property_dependencies["encryptionSettings"]
    assert not [v for v in plan.policies["violations"] if v["policy"] == "azure-key-expiry"]
