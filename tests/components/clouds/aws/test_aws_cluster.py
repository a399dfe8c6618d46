"""The AWS cluster as the engine records it: fabric, storage, identity, capacity, for both shipped stacks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from bootstrap_node import sent_user_data
from conftest import SHIPPED_STACKS, of_type, one, read_cluster, write_stack
from conftest import shipped_plan as shipped

from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.stackfile import SpecInvalid

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"


def plan_variant(tmp_path: Path, stack: str = "aws-train-p5", **group_changes: Any) -> PlanResult:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["node_groups"][0].update(group_changes)
    return plan_stack(write_stack(tmp_path, "variant", cluster))



def test_p5_launch_template_has_32_efa_interfaces() -> None:
    interfaces = one(shipped("aws-train-p5"), LT).inputs["networkInterfaces"]
    assert [i["networkCardIndex"] for i in interfaces] == list(range(32))
    assert interfaces[0]["deviceIndex"] == 0 and interfaces[0]["interfaceType"] == "efa"
    assert {i["interfaceType"] for i in interfaces[1:]} == {"efa-only"}
    assert all(i["deviceIndex"] == 0 for i in interfaces)


def test_interfaces_carry_the_node_security_group_and_no_public_ip() -> None:
    plan = shipped("aws-train-p5")
    lt = one(plan, LT).inputs
    sg_ids = {tuple(i["securityGroups"]) for i in lt["networkInterfaces"]}
    assert len(sg_ids) == 1 and next(iter(sg_ids))[0].startswith("sg-")
    assert "vpcSecurityGroupIds" not in lt and "securityGroupNames" not in lt
    assert all(s.inputs["mapPublicIpOnLaunch"] is False for s in of_type(plan, "aws:ec2/subnet:Subnet"))


@pytest.mark.parametrize("stack", ["aws-train-p5", "aws-infer-g6e"])
def test_multi_interface_templates_leave_associate_public_ip_unset(stack: str) -> None:
    # EC2: "The associatePublicIPAddress parameter cannot be specified when launching with multiple network
    # interfaces", on the primary interface too; the private subnets map no public IP instead.
    for template in of_type(shipped(stack), LT):
        interfaces = template.inputs["networkInterfaces"]
        assert len(interfaces) > 1
        assert not [i for i in interfaces if "associatePublicIpAddress" in i]


def test_single_interface_template_refuses_a_public_ip(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, "aws-infer-g6e", rdma="off")
    (interface,) = one(plan, LT).inputs["networkInterfaces"]
    assert interface["associatePublicIpAddress"] == "false"


def test_node_security_group_references_itself_both_ways() -> None:
    plan = shipped("aws-train-p5")
    sg = next(r for r in of_type(plan, "aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("-nodes"))
    for direction in ("ingress", "egress"):
        assert any(rule.get("self") is True and rule["protocol"] == "-1" for rule in sg.inputs[direction])
    assert not any(rule.get("fromPort") == 22 for rule in sg.inputs["ingress"])


def test_g6e_launch_template_has_4_efa_interfaces() -> None:
    interfaces = one(shipped("aws-infer-g6e"), LT).inputs["networkInterfaces"]
    assert [(i["networkCardIndex"], i["interfaceType"]) for i in interfaces] == [
        (0, "efa"), (1, "efa-only"), (2, "efa-only"), (3, "efa-only")]


def test_p4d_launch_template_has_4_efa_interfaces(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, instance_types=["p4d.24xlarge"])
    assert len(one(plan, LT).inputs["networkInterfaces"]) == 4


def test_imdsv2_required_with_container_hop_limit() -> None:
    metadata = one(shipped("aws-train-p5"), LT).inputs["metadataOptions"]
    assert metadata["httpTokens"] == "required" and metadata["httpPutResponseHopLimit"] == 2


def test_every_block_device_encrypted_with_the_stack_key() -> None:
    plan = shipped("aws-train-p5")
    key = one(plan, "aws:kms/key:Key")
    for lt in of_type(plan, LT):
        for mapping in lt.inputs["blockDeviceMappings"]:
            assert mapping["ebs"]["encrypted"] == "true"
            assert mapping["ebs"]["volumeType"] == "gp3"
            assert mapping["ebs"]["kmsKeyId"].startswith("arn:aws:kms:us-east-1:")
        assert key.urn in lt.property_dependencies["blockDeviceMappings"]


def test_kms_key_rotates_and_waits_30_days() -> None:
    key = one(shipped("aws-train-p5"), "aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True and key.inputs["deletionWindowInDays"] == 30
    assert key.protect is False


def test_prod_protects_the_key(tmp_path: Path) -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["environment"] = "prod"
    plan = plan_stack(write_stack(tmp_path, "prod", cluster))
    assert one(plan, "aws:kms/key:Key").protect is True
    assert len(of_type(plan, "aws:ec2/natGateway:NatGateway")) == 1  # one zone, one NAT


def test_cluster_placement_group_and_one_subnet() -> None:
    plan = shipped("aws-train-p5")
    pg = one(plan, "aws:ec2/placementGroup:PlacementGroup")
    assert pg.inputs["strategy"] == "cluster"
    assert one(plan, LT).inputs["placement"]["groupName"].startswith("train-h100-pg")
    assert len(one(plan, ASG).inputs["vpcZoneIdentifiers"]) == 1


def test_asg_spot_mixed_instances() -> None:
    asg = one(shipped("aws-train-p5"), ASG)
    inputs = asg.inputs
    distribution = inputs["mixedInstancesPolicy"]["instancesDistribution"]
    assert distribution["spotAllocationStrategy"] == "price-capacity-optimized"
    assert distribution["onDemandBaseCapacity"] == 1
    assert distribution["onDemandPercentageAboveBaseCapacity"] == 0
    assert inputs["capacityRebalance"] is True
    template = inputs["mixedInstancesPolicy"]["launchTemplate"]
    assert [o["instanceType"] for o in template["overrides"]] == ["p5.48xlarge"]
    assert template["launchTemplateSpecification"]["version"] == "1"  # explicit, never $Latest
    assert (inputs["minSize"], inputs["desiredCapacity"], inputs["maxSize"]) == (0, 2, 16)
    assert asg.ignore_changes == ("desiredCapacity", "initialLifecycleHooks")
    assert "instanceRefresh" not in inputs  # a new image rolls no training node (instance_refresh: none)
    assert inputs["name"] == "gpufleet-train-dev-h100"


def test_asg_lifecycle_hooks() -> None:
    hooks = {h["lifecycleTransition"]: h for h in one(shipped("aws-train-p5"), ASG).inputs["initialLifecycleHooks"]}
    launch = hooks["autoscaling:EC2_INSTANCE_LAUNCHING"]
    terminate = hooks["autoscaling:EC2_INSTANCE_TERMINATING"]
    assert launch["defaultResult"] == "ABANDON" and launch["name"] == "node-check"
    assert terminate["defaultResult"] == "CONTINUE" and terminate["heartbeatTimeout"] == 300


def user_settings(plan: PlanResult) -> dict[str, str]:
    """The bootstrap.env the launch template's user data writes, as NAME -> value."""

    document = libyaml_files.load(sent_user_data(one(plan, LT).inputs["userData"]))
    env = next(f["content"] for f in document["write_files"] if f["path"] == "/etc/gpufleet/bootstrap.env")
    return dict(line.split("=", 1) for line in env.splitlines() if not line.startswith("#"))


def test_lifecycle_hooks_are_resources_that_reach_the_live_group(tmp_path: Path) -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["bootstrap"]["checkpoint_grace_seconds"] = 600
    plan = plan_stack(write_stack(tmp_path, "grace", cluster))
    asg = one(plan, ASG)
    hooks = {h.inputs["lifecycleTransition"]: h for h in of_type(plan, "aws:autoscaling/lifecycleHook:LifecycleHook")}
    assert set(hooks) == {"autoscaling:EC2_INSTANCE_LAUNCHING", "autoscaling:EC2_INSTANCE_TERMINATING"}
    for hook in hooks.values():
        assert hook.inputs["autoscalingGroupName"] == asg.inputs["name"]
        assert hook.property_dependencies["autoscalingGroupName"] == (asg.urn,)
    # The group is created with the same hooks, so its first instances are held too.
    initial = {h["lifecycleTransition"]: h for h in asg.inputs["initialLifecycleHooks"]}
    assert initial == {t: {k: v for k, v in h.inputs.items() if k != "autoscalingGroupName"} for t, h in hooks.items()}
    assert hooks["autoscaling:EC2_INSTANCE_TERMINATING"].inputs["heartbeatTimeout"] == 600
    # The node completes the hooks the group registers, and checkpoints within the same grace.
    settings = user_settings(plan)
    assert settings["GPUFLEET_LAUNCH_HOOK"] == hooks["autoscaling:EC2_INSTANCE_LAUNCHING"].inputs["name"]
    assert settings["GPUFLEET_TERMINATE_HOOK"] == hooks["autoscaling:EC2_INSTANCE_TERMINATING"].inputs["name"]
    assert settings["GPUFLEET_CHECKPOINT_GRACE_SECONDS"] == "600"


def test_user_data_completes_the_launch_hook() -> None:

    user_data = sent_user_data(one(shipped("aws-train-p5"), LT).inputs["userData"])
    assert "gpufleet-train-dev-h100" in user_data and "node-check" in user_data
    assert len(user_data.encode()) <= 16384


def test_fallback_with_other_layout_gets_its_own_template(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, instance_types=["p5.48xlarge", "p5en.48xlarge"])
    templates = {r.inputs["instanceType"]: r for r in of_type(plan, LT)}
    assert len(templates["p5.48xlarge"].inputs["networkInterfaces"]) == 32
    assert len(templates["p5en.48xlarge"].inputs["networkInterfaces"]) == 16
    overrides = one(plan, ASG).inputs["mixedInstancesPolicy"]["launchTemplate"]["overrides"]
    assert "launchTemplateSpecification" not in overrides[0]
    assert overrides[1]["launchTemplateSpecification"]["launchTemplateId"].startswith("lt-")
    assert templates["p5en.48xlarge"].urn in one(plan, ASG).depends_on


def test_no_iam_statement_has_a_wildcard_action() -> None:
    plan = shipped("aws-train-p5")
    documents = [json.loads(r.inputs["policy"]) for r in of_type(plan, "aws:iam/rolePolicy:RolePolicy")]
    documents += [json.loads(r.inputs["assumeRolePolicy"]) for r in of_type(plan, "aws:iam/role:Role")]
    assert documents
    for document in documents:
        for statement in document["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert all("*" not in action for action in actions), statement
            assert "NotAction" not in statement


def test_lifecycle_permission_is_scoped_to_own_group() -> None:
    (node,) = [r for r in of_type(shipped("aws-train-p5"), "aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-node")]
    policy = json.loads(node.inputs["policy"])
    lifecycle = next(s for s in policy["Statement"] if "autoscaling:CompleteLifecycleAction" in s["Action"])
    assert lifecycle["Resource"] == [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpufleet-train-dev-h100"]


def test_interruption_events_go_to_an_encrypted_topic() -> None:
    plan = shipped("aws-train-p5")
    rule = one(plan, "aws:cloudwatch/eventRule:EventRule")
    pattern = json.loads(rule.inputs["eventPattern"])
    assert "EC2 Spot Instance Interruption Warning" in pattern["detail-type"]
    assert "EC2 Instance Rebalance Recommendation" in pattern["detail-type"]
    (topic,) = [t for t in of_type(plan, "aws:sns/topic:Topic") if t.name == "train-interruptions"]
    assert topic.inputs["kmsMasterKeyId"].startswith("arn:aws:kms:")
    # The alarm recipients read it: a topic nobody is subscribed to tells no one a node was taken.
    readers = [s for s in of_type(plan, "aws:sns/topicSubscription:TopicSubscription") if topic.urn in s.depends_on]
    assert [(s.inputs["protocol"], s.inputs["endpoint"]) for s in readers] == [("email", "oncall@example.com")]


def test_spot_without_alarm_recipients_makes_no_interruption_topic() -> None:
    plan = shipped("aws-infer-g6e")  # mixed capacity, no monitoring.alarms
    assert not of_type(plan, "aws:sns/topic:Topic") and not of_type(plan, "aws:cloudwatch/eventRule:EventRule")
    assert plan.exit_code == 0, plan.policies["violations"]


def test_resource_count_does_not_grow_with_max_size(tmp_path: Path) -> None:
    small = plan_variant(tmp_path, size={"min": 0, "desired": 2, "max": 16})
    (tmp_path / "Pulumi.variant.yaml").unlink()
    large = plan_variant(tmp_path, size={"min": 0, "desired": 2, "max": 512})
    assert len(large.resources) == len(small.resources)
    assert one(large, ASG).inputs["maxSize"] == 512


def test_capacity_block_targets_the_reservation(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, capacity="capacity-block", reservation_id="cr-0123456789abcdef0",
                        size={"min": 4, "desired": 4, "max": 4}, on_demand_base=0, instance_types=["p5.48xlarge"])
    lt = one(plan, LT).inputs
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target["capacityReservationId"] == "cr-0123456789abcdef0"
    asg = one(plan, ASG).inputs
    assert "mixedInstancesPolicy" not in asg and asg["launchTemplate"]["version"] == "1"
    assert not of_type(plan, "aws:cloudwatch/eventRule:EventRule")


def test_fleet_provisioner(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, provisioner="fleet")
    assert not of_type(plan, ASG)
    fleet = one(plan, "aws:ec2/fleet:Fleet").inputs
    assert fleet["type"] == "maintain"
    assert fleet["targetCapacitySpecification"] == {
        "defaultTargetCapacityType": "spot", "totalTargetCapacity": 2, "onDemandTargetCapacity": 1,
        "spotTargetCapacity": 1}
    types = [o["instanceType"] for c in fleet["launchTemplateConfigs"] for o in c["overrides"]]
    assert types == ["p5.48xlarge"]


def test_fleet_launches_the_primary_type_first_and_caps_spot(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, provisioner="fleet", spot_max_price=20.5,
                        instance_types=["p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge"])
    fleet = one(plan, "aws:ec2/fleet:Fleet").inputs
    overrides = {o["instanceType"]: o for c in fleet["launchTemplateConfigs"] for o in c["overrides"]}
    assert {t: o["priority"] for t, o in overrides.items()} == {"p5.48xlarge": 0, "p5en.48xlarge": 1, "p4d.24xlarge": 2}
    assert fleet["onDemandOptions"]["allocationStrategy"] == "prioritized"
    assert fleet["spotOptions"]["allocationStrategy"] == "capacity-optimized-prioritized"
    assert {o["maxPrice"] for o in overrides.values()} == {"20.5000"}


def test_fleet_without_spot_max_price_caps_at_on_demand(tmp_path: Path) -> None:
    fleet = one(plan_variant(tmp_path, provisioner="fleet"), "aws:ec2/fleet:Fleet").inputs
    assert not [o for c in fleet["launchTemplateConfigs"] for o in c["overrides"] if "maxPrice" in o]


def test_brought_network_creates_no_vpc(tmp_path: Path) -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["network"] = {"vpc_id": "vpc-0123456789abcdef0", "subnet_ids": ["subnet-0abc"], "zones": ["us-east-1a"]}
    plan = plan_stack(write_stack(tmp_path, "byo", cluster))
    assert not of_type(plan, "aws:ec2/vpc:Vpc")
    assert one(plan, ASG).inputs["vpcZoneIdentifiers"] == ["subnet-0abc"]


def test_brought_security_group_goes_on_every_interface_and_none_is_created(tmp_path: Path) -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["network"]["security_group_id"] = "sg-0123456789abcdef0"
    plan = plan_stack(write_stack(tmp_path, "byo-sg", cluster))
    assert not [r for r in of_type(plan, "aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("-nodes")]
    interfaces = one(plan, LT).inputs["networkInterfaces"]
    assert len(interfaces) == 32
    assert all(i["securityGroups"] == ["sg-0123456789abcdef0"] for i in interfaces)


def test_brought_security_group_refuses_admin_cidrs(tmp_path: Path) -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["network"].update(security_group_id="sg-0123456789abcdef0", admin_cidrs=["10.0.0.0/24"])
    with pytest.raises(SpecInvalid, match="network.admin_cidrs: applies to the security group gpufleet creates"):
        plan_stack(write_stack(tmp_path, "byo-sg", cluster))


def test_network_has_nat_and_ssm_endpoints() -> None:
    plan = shipped("aws-train-p5")
    endpoints = {r.inputs["serviceName"] for r in of_type(plan, "aws:ec2/vpcEndpoint:VpcEndpoint")}
    assert endpoints == {f"com.amazonaws.us-east-1.{s}" for s in ("s3", "ssm", "ssmmessages", "ec2messages")}
    assert len(of_type(plan, "aws:ec2/natGateway:NatGateway")) == 1


def test_every_child_is_parented_under_the_cluster() -> None:
    plan = shipped("aws-train-p5")
    cluster = one(plan, "gpufleet:aws:Cluster")
    assert cluster.parent.endswith("pulumi:pulumi:Stack::gpufleet-aws-train-p5")
    urns = {r.urn for r in plan.resources}
    assert all(r.parent in urns for r in plan.resources if r is not cluster)


@pytest.mark.parametrize("stack", ["aws-train-p5", "aws-infer-g6e"])
def test_shipped_stacks_plan_clean(stack: str) -> None:
    plan = shipped(stack)
    assert plan.exit_code == 0, plan.policies["violations"]
    assert plan.policies["evaluated"] >= 20


def test_program_exports_the_clusters_typed_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulumi

    from components.clouds.aws.cluster import AwsGpuCluster

    exported: dict[str, object] = {}
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.setdefault(name, value))
    plan_stack(SHIPPED_STACKS / "Pulumi.aws-train-p5.yaml", SHIPPED_STACKS)
    typed = set(AwsGpuCluster.__annotations__)
    assert set(exported) == typed
    assert all(isinstance(exported[name], pulumi.Output) for name in ("key_arn", "vpc_id", "security_group_id"))
    assert set(exported["group_names"]) == {"h100"}
