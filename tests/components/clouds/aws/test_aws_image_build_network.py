"""The AWS image bake runs where organisations run it, without the default VPC: in a created
private subnet with NAT egress and a build security group that admits nothing inbound, or in a brought subnet and
security group."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED_STACKS, of_type, shipped_plan
from ruamel.yaml import YAML
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.plan.planner import PlanResult, plan_stack

INFRA = "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"
SG = "aws:ec2/securityGroup:SecurityGroup"
SUBNET = "aws:ec2/subnet:Subnet"
SUBNET_ID, SG_ID = "subnet-0a1b2c3d4e5f60718", "sg-0a1b2c3d4e5f60718"


def images_config() -> dict[str, Any]:
    return YAML(typ="safe", pure=True).load((SHIPPED_STACKS / "Pulumi.aws-images.yaml").read_text())["config"]


def plan_images(tmp_path: Path, network: dict[str, Any]) -> PlanResult:
    config = copy.deepcopy(images_config())
    config["gpufleet:images"]["network"] = network
    path = tmp_path / "Pulumi.images-net.yaml"
    YAML(typ="safe", pure=True).dump({"config": config}, path)
    return plan_stack(path)


def by_urn(plan: PlanResult) -> dict[str, Any]:
    return {r.urn: r for r in plan.resources}


def test_the_shipped_bake_builds_in_a_created_private_subnet_behind_its_own_group() -> None:
    plan = shipped_plan("aws-images")
    assert plan.exit_code == 0, plan.policies["violations"]  # flow log and closed default group: rules pass
    (infra,) = of_type(plan, INFRA)
    resources = by_urn(plan)
    (subnet_urn,) = infra.property_dependencies["subnetId"]
    (group_urn,) = infra.property_dependencies["securityGroupIds"]
    subnet, group = resources[subnet_urn], resources[group_urn]
    assert infra.inputs["subnetId"].startswith("subnet-") and infra.inputs["securityGroupIds"][0].startswith("sg-")
    # The private subnet: no public address, its only route out the NAT gateway.
    assert subnet.type == SUBNET and subnet.inputs["mapPublicIpOnLaunch"] is False
    assert subnet.inputs["availabilityZone"] == "us-east-1a" and subnet.name.endswith("-private-us-east-1a")
    (route_table,) = [r for r in plan.resources if r.type == "aws:ec2/routeTable:RouteTable"
                      and r.name == subnet.name]
    assert [route.get("natGatewayId", "").startswith("nat-") for route in route_table.inputs["routes"]] == [True]
    # The build group admits nothing and lets out only what the bake downloads over.
    assert group.type == SG and not group.inputs.get("ingress")
    assert [(e["protocol"], e["fromPort"], e["toPort"], e["cidrBlocks"]) for e in group.inputs["egress"]] == [
        ("tcp", 80, 80, ["0.0.0.0/0"]), ("tcp", 443, 443, ["0.0.0.0/0"])]
    # Every created VPC: a flow log of all traffic and its default group adopted and emptied.
    (vpc,) = of_type(plan, "aws:ec2/vpc:Vpc")
    (flow,) = of_type(plan, "aws:ec2/flowLog:FlowLog")
    assert flow.property_dependencies["vpcId"] == (vpc.urn,) and flow.inputs["trafficType"] == "ALL"
    (default,) = of_type(plan, "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    assert not default.inputs.get("ingress") and not default.inputs.get("egress")
    # The flow log group is encrypted with the created image key, whose policy admits it.
    (log_group,) = of_type(plan, "aws:cloudwatch/logGroup:LogGroup")
    (key,) = of_type(plan, "aws:kms/key:Key")
    assert log_group.property_dependencies["kmsKeyId"] == (key.urn,)
    assert '"LogGroupUsesKey"' in key.inputs["policy"] and log_group.inputs["name"] in key.inputs["policy"]


def test_a_brought_subnet_and_group_are_used_and_nothing_is_created(tmp_path: Path) -> None:
    plan = plan_images(tmp_path, {"subnet_id": SUBNET_ID, "security_group_id": SG_ID})
    assert plan.exit_code == 0
    (infra,) = of_type(plan, INFRA)
    assert infra.inputs["subnetId"] == SUBNET_ID and infra.inputs["securityGroupIds"] == [SG_ID]
    assert not of_type(plan, "aws:ec2/vpc:Vpc") and not of_type(plan, SG)


def test_a_created_network_takes_the_zone_and_cidr_given(tmp_path: Path) -> None:
    plan = plan_images(tmp_path, {"cidr": "10.77.0.0/20", "zone": "us-east-1d"})
    (vpc,) = of_type(plan, "aws:ec2/vpc:Vpc")
    assert vpc.inputs["cidrBlock"] == "10.77.0.0/20"
    (infra,) = of_type(plan, INFRA)
    subnet = by_urn(plan)[infra.property_dependencies["subnetId"][0]]
    assert subnet.inputs["availabilityZone"] == "us-east-1d" and subnet.inputs["cidrBlock"] == "10.77.0.0/22"


def test_the_build_networks_flow_logs_keep_the_stacks_retention(tmp_path: Path) -> None:
    def retention(plan: PlanResult) -> int:
        (log_group,) = of_type(plan, "aws:cloudwatch/logGroup:LogGroup")
        return log_group.inputs["retentionInDays"]

    assert retention(shipped_plan("aws-images")) == 30
    assert retention(plan_images(tmp_path, {"log_retention_days": 365})) == 365


@pytest.mark.parametrize(
    ("network", "message"),
    [
        ({"log_retention_days": 31}, "network.log_retention_days: aws does not accept 31 days; use one of 1,3,5,"),
        ({"subnet_id": SUBNET_ID, "security_group_id": SG_ID, "log_retention_days": 90},
         "network: log_retention_days is the created build VPC's flow log retention"),
        ({"subnet_id": SUBNET_ID}, "network: bring subnet_id and security_group_id "
                                   "together"),
        ({"security_group_id": "sg-1"}, "network.security_group_id: must be a security group id"),
        ({"zone": "us-west-2a"}, "network: zone 'us-west-2a' is not a zone of the "
                                 "build region us-east-1"),
        ({"cidr": "10.77.0.0/26"}, "network.cidr: 10.77.0.0/26 is too small"),
    ],
)
def test_a_network_the_bake_cannot_use_exits_2_naming_the_field(stacks_dir: Path, network: dict[str, Any],
                                                                 message: str) -> None:
    config = copy.deepcopy(images_config())
    config["gpufleet:images"]["network"] = network
    YAML(typ="safe", pure=True).dump({"config": config}, stacks_dir / "Pulumi.bad.yaml")
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "bad", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert message in " ".join(result.output.split()), result.output


def test_the_plan_says_the_created_build_network_bills_between_bakes_unpriced(tmp_path: Path) -> None:
    shipped = shipped_plan("aws-images").summary
    # A NAT gateway, an address and interface endpoints bill by the hour with no catalog price: null, never 0.
    assert set(shipped["hourly_usd"].values()) == {None}
    (standing,) = shipped["unpriced"]
    assert "1 NAT gateway" in standing and "https://aws.amazon.com/vpc/pricing/" in standing
    brought = plan_images(tmp_path, {"subnet_id": SUBNET_ID, "security_group_id": SG_ID}).summary
    assert set(brought["hourly_usd"].values()) == {0.0} and "unpriced" not in brought
