"""What a first real deploy of the AWS templates needs, as the engine records it (metrics reach
CloudWatch, alarms reach a person, reserved capacity is used, storage mounts, the node side of training)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from bootstrap_node import sent_user_data
from conftest import of_type, read_cluster, write_stack
from conftest import shipped_plan as shipped

from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def variant(tmp_path: Path, stack: str, change: Any, name: str = "variant") -> PlanResult:
    cluster = copy.deepcopy(read_cluster(stack))
    change(cluster)
    return plan_stack(write_stack(tmp_path, name, cluster))


def node_statements(plan: PlanResult) -> dict[str, dict[str, Any]]:
    (policy,) = [r for r in of_type(plan, ROLE_POLICY) if r.name.endswith("-node")]  # not the flow-log role's
    return {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}


def test_with_metrics_the_agent_may_read_the_instance_tags_it_dimensions_by() -> None:
    # ${aws:AutoScalingGroupName}: the agent's ec2tagger calls ec2:DescribeTags and drops data points until it can.
    for stack in ("aws-train-p5", "aws-infer-g6e"):
        tags = node_statements(shipped(stack))["AgentReadsInstanceTags"]
        assert tags == {"Sid": "AgentReadsInstanceTags", "Effect": "Allow", "Action": ["ec2:DescribeTags"],
                        "Resource": "*"}


def test_without_metrics_no_tag_read_is_granted(tmp_path: Path) -> None:
    def off(cluster: dict[str, Any]) -> None:
        cluster["monitoring"] = {"gpu_metrics": False}

    assert "AgentReadsInstanceTags" not in node_statements(variant(tmp_path, "aws-train-p5", off))


def test_alarm_recipients_are_subscribed_to_the_created_topic_that_the_budget_notifies_too() -> None:
    plan = shipped("aws-train-p5")
    (topic,) = [t for t in of_type(plan, "aws:sns/topic:Topic") if t.name == "train-alarms"]
    # The interruption topic has its own subscription (the same recipients): this is the alarm topic's.
    (subscription,) = [s for s in of_type(plan, "aws:sns/topicSubscription:TopicSubscription")
                       if topic.urn in s.property_dependencies["topic"]]
    assert subscription.inputs["protocol"] == "email" and subscription.inputs["endpoint"] == "oncall@example.com"
    (budget,) = of_type(plan, "aws:budgets/budget:Budget")
    assert topic.urn in budget.property_dependencies["notifications"]
    assert not [v for v in plan.policies["violations"] if v["policy"] == "aws-alarm-topic-subscribed"]


def test_a_created_topic_without_recipients_fails_the_plan(tmp_path: Path) -> None:
    def nobody(cluster: dict[str, Any]) -> None:
        del cluster["monitoring"]["alarms"]["emails"]

    plan = variant(tmp_path, "aws-train-p5", nobody)
    assert plan.exit_code == 1
    (found,) = [v for v in plan.policies["violations"] if v["policy"] == "aws-alarm-topic-subscribed"]
    assert found["level"] == "mandatory" and found["urn"].endswith("::train-alarms")


@pytest.mark.parametrize(("emails", "reason"), [
    (["oncall"], "must be an e-mail address"),
    (["on call@example.com"], "must be an e-mail address"),
    (["a@example.com", "a@example.com"], "listed twice"),
])
def test_bad_recipients_exit_2_naming_the_field(tmp_path: Path, monkeypatch, capsys, emails, reason) -> None:
    from cli_run import run_main

    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["monitoring"]["alarms"]["emails"] = emails
    write_stack(tmp_path, "variant", cluster)
    monkeypatch.chdir(tmp_path)
    assert run_main(monkeypatch, "plan", "--stack", "variant", "--stacks-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "monitoring.alarms.emails" in err and reason in err and "Traceback" not in err


def test_recipients_with_a_brought_topic_are_refused() -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["monitoring"]["alarms"]["target"] = "arn:aws:sns:us-east-1:123456789012:ops"
    with pytest.raises(SpecInvalid) as raised:
        resolve_cluster(cluster)
    assert any(e.path == "monitoring.alarms" and "brought target" in e.message for e in raised.value.errors)


def capacity_block(cluster: dict[str, Any]) -> None:
    cluster["node_groups"][0].update(capacity="capacity-block", reservation_id="cr-0123456789abcdef0",
                                     size={"min": 4, "desired": 4, "max": 4}, on_demand_base=0)


def reservation(cluster: dict[str, Any]) -> None:
    cluster["node_groups"][0].update(capacity="reservation", reservation_id="cr-0fedcba9876543210",
                                     size={"min": 0, "desired": 2, "max": 8}, on_demand_base=0)


@pytest.mark.parametrize("fork", [capacity_block, reservation])
def test_reserved_capacity_gets_no_placement_group_of_ours(tmp_path: Path, fork) -> None:
    # A Capacity Block / reservation is placed already; a placement group beside it launches outside it.
    plan = variant(tmp_path, "aws-train-p5", fork)
    assert plan.exit_code == 0, plan.policies["violations"]
    assert not of_type(plan, "aws:ec2/placementGroup:PlacementGroup")
    for template in of_type(plan, "aws:ec2/launchTemplate:LaunchTemplate"):
        assert "placement" not in template.inputs
        assert template.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert not [v for v in plan.policies["violations"] if v["policy"] == "aws-efa-cluster-placement-group"]


def test_a_type_the_catalog_marks_not_offered_in_the_region_exits_2_naming_it(tmp_path, monkeypatch, capsys) -> None:
    from cli_run import run_main

    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0]["instance_types"] = ["p5.48xlarge", "p5e.48xlarge"]  # the template's old fallback
    write_stack(tmp_path, "variant", cluster)
    assert run_main(monkeypatch, "plan", "--stack", "variant", "--stacks-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "node_groups[0].instance_types[1]: p5e.48xlarge is not offered in us-east-1 per the catalog" in err


def test_every_type_of_the_shipped_templates_is_offered_in_their_region() -> None:
    from gpufleet.catalog import load_catalog

    catalog = load_catalog()
    for stack in ("aws-train-p5", "aws-infer-g6e"):
        cluster = read_cluster(stack)
        for group in cluster["node_groups"]:
            for name in group["instance_types"]:
                price = catalog.get("aws", name).price(cluster["region"])
                assert price is not None and price.offered, (stack, name)


def test_the_file_system_waits_for_the_rules_createfilesystem_validates() -> None:
    plan = shipped("aws-train-p5")
    (fs,) = of_type(plan, "aws:fsx/lustreFileSystem:LustreFileSystem")
    rules = [*of_type(plan, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"),
             *of_type(plan, "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")]
    assert len(rules) == 8 and {r.urn for r in rules} <= set(fs.depends_on)


def test_no_mount_requires_a_unit_ubuntu_lacks() -> None:


    for template in of_type(shipped("aws-train-p5"), "aws:ec2/launchTemplate:LaunchTemplate"):
        text = sent_user_data(template.inputs["userData"])
        assert "network.service" not in text
        (mount,) = libyaml_files.load(text)["mounts"]
        assert "x-systemd.requires=network-online.target" in mount[3].split(",") and "_netdev" in mount[3]


def test_nodes_admit_the_lustre_ports_from_the_file_systems_group() -> None:
    plan = shipped("aws-train-p5")
    groups = {g.name: g for g in of_type(plan, "aws:ec2/securityGroup:SecurityGroup")}
    nodes, lustre = groups["train-nodes"], groups["train-lustre"]
    from_fs = [r for r in nodes.inputs["ingress"] if r.get("securityGroups")]
    assert sorted((r["fromPort"], r["toPort"], r["protocol"]) for r in from_fs) == [(988, 988, "tcp"),
                                                                                  (1018, 1023, "tcp")]
    assert lustre.urn in nodes.property_dependencies["ingress"]


def test_alarms_cover_what_removes_a_node_and_count_new_xids() -> None:
    alarms = {a.inputs["metricName"]: a.inputs for a in of_type(shipped("aws-train-p5"),
                                                                 "aws:cloudwatch/metricAlarm:MetricAlarm")}
    assert {"gpu_fatal_xid_errors", "gpu_row_remap_failures", "gpu_ecc_uncorrectable"} <= set(alarms)
    for metric in ("gpu_fatal_xid_errors", "gpu_row_remap_failures", "gpu_ecc_uncorrectable"):
        assert "the node leaves its group" in alarms[metric]["alarmDescription"]
    # A count of new XIDs per minute: summed, and the alarm says most XIDs leave the node in place.
    assert alarms["gpu_xid_errors"]["statistic"] == "Sum" and "new XID" in alarms["gpu_xid_errors"]["alarmDescription"]
    assert "row-remap" not in alarms["gpu_ecc_uncorrectable"]["alarmDescription"]
