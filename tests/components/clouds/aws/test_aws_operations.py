"""AWS operations options as the engine records them: GPU metrics in the bootstrap, alarms per group with their target,
idle scale-down on the GPU metric, the budget, and the shared Lustre file system on the stack key behind a
security group open to the nodes only; and the options refused by name where they are not built."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from bootstrap_node import sent_user_data
from conftest import REPO, of_type, one, read_cluster, write_stack
from conftest import shipped_plan as shipped

from components.bootstrap.cloud_init import GPU_HEALTH_CLOUD_PART
from components.bootstrap.operations import CLOUDWATCH_AGENT_CONFIG, DCGM_UP_METRIC
from gpufleet.clouds.lookup import backend
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG = "aws:ec2/securityGroup:SecurityGroup"


def cloud_config(plan: PlanResult) -> dict[str, Any]:
    return libyaml_files.load(sent_user_data(one(plan, LT).inputs["userData"]))


def written(plan: PlanResult, path: str) -> dict[str, Any]:
    (found,) = [f for f in cloud_config(plan)["write_files"] if f["path"] == path]
    return found


def test_p5_bootstrap_configures_the_cloudwatch_agent_for_gpu_metrics() -> None:
    agent = json.loads(written(shipped("aws-train-p5"), CLOUDWATCH_AGENT_CONFIG)["content"])
    metrics = agent["metrics"]
    assert metrics["namespace"] == "gpufleet"
    assert {"utilization_gpu", "memory_used", "power_draw", "temperature_gpu"} <= set(
        metrics["metrics_collected"]["nvidia_gpu"]["measurement"])
    assert metrics["aggregation_dimensions"] == [["AutoScalingGroupName"]]
    document = cloud_config(shipped("aws-train-p5"))
    assert any("amazon-cloudwatch-agent-ctl" in cmd[0] and f"file:{CLOUDWATCH_AGENT_CONFIG}" in cmd
               for cmd in document["runcmd"])
    assert "nvidia-dcgm.service" in document["runcmd"][1] and "gpufleet-gpu-health.service" in document["runcmd"][1]


def test_gpu_health_script_is_the_packaged_source() -> None:
    import gzip

    packed = written(shipped("aws-train-p5"), "/usr/local/sbin/gpufleet-gpu-health")
    assert packed["encoding"] == "gz+b64"
    scripts = REPO / "components/bootstrap/scripts"
    shipped_script = gzip.decompress(base64.b64decode(packed["content"])).decode()
    core, cloud_part = (scripts / "gpu-health.sh").read_text(), (scripts / "gpu-health-aws.sh").read_text()
    assert shipped_script == core.replace(GPU_HEALTH_CLOUD_PART, cloud_part.split("\n", 1)[1])
    assert "aliyun" not in shipped_script


def test_node_role_may_publish_in_its_namespace_and_mark_its_own_instances_unhealthy() -> None:
    plan = shipped("aws-train-p5")
    (policy,) = [r for r in of_type(plan, "aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-node")]
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    assert statements["PutOwnMetrics"]["Condition"] == {"StringEquals": {"cloudwatch:namespace": "gpufleet"}}
    health = statements["MarkOwnInstancesUnhealthy"]
    assert health["Action"] == ["autoscaling:SetInstanceHealth"]
    assert health["Resource"] == [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpufleet-train-dev-h100"]


def test_p5_alarms_on_xid_ecc_and_node_check_notify_the_encrypted_topic() -> None:
    plan = shipped("aws-train-p5")
    (topic,) = [t for t in of_type(plan, "aws:sns/topic:Topic") if t.name == "train-alarms"]
    key = one(plan, "aws:kms/key:Key")
    assert key.urn in topic.property_dependencies["kmsMasterKeyId"]
    alarms = {a.inputs["metricName"]: a for a in of_type(plan, ALARM)}
    for metric in ("gpu_xid_errors", "gpu_ecc_uncorrectable", "nodecheck_failed"):
        alarm = alarms[metric]
        assert alarm.inputs["dimensions"] == {"NodeGroup": "gpufleet-train-dev-h100"}
        assert alarm.inputs["comparisonOperator"] == "GreaterThanThreshold" and alarm.inputs["threshold"] == 0
        (action,) = alarm.inputs["alarmActions"]
        assert action.startswith("arn:aws:sns:us-east-1:")
        assert topic.urn in alarm.property_dependencies["alarmActions"]
    low = alarms["nvidia_smi_utilization_gpu"].inputs
    assert low["dimensions"] == {"AutoScalingGroupName": "gpufleet-train-dev-h100"}
    assert low["threshold"] == 10 and low["evaluationPeriods"] == 120 and low["period"] == 60


def test_p5_alarms_when_dcgm_stops_answering_a_node() -> None:
    # Before: a DCGM outage published zero errors, and nothing alarmed.
    (alarm,) = [a.inputs for a in of_type(shipped("aws-train-p5"), ALARM) if a.inputs["metricName"] == DCGM_UP_METRIC]
    assert (alarm["statistic"], alarm["comparisonOperator"], alarm["threshold"]) == ("Minimum", "LessThanThreshold", 1)
    assert alarm["dimensions"] == {"NodeGroup": "gpufleet-train-dev-h100"} and alarm["evaluationPeriods"] == 1


def test_key_policy_lets_alarms_and_budgets_publish_to_the_encrypted_topic() -> None:
    key = one(shipped("aws-train-p5"), "aws:kms/key:Key")
    sids = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    for sid, service in (("CloudWatchAlarmsPublishToEncryptedTopic", "cloudwatch.amazonaws.com"),
                         ("BudgetsPublishToEncryptedTopic", "budgets.amazonaws.com")):
        assert sids[sid]["Principal"] == {"Service": service}
        assert sids[sid]["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    # EventBridge's delivery to an encrypted topic: AWS's statement has no condition (the topic policy scopes it).
    assert "Condition" not in sids["EventBridgePublishesToEncryptedTopic"]


def test_p5_budget_filters_on_the_cluster_tag_and_notifies_at_each_percent() -> None:
    budget = one(shipped("aws-train-p5"), "aws:budgets/budget:Budget").inputs
    assert budget["budgetType"] == "COST" and budget["timeUnit"] == "MONTHLY"
    assert budget["limitAmount"] == "657000.00"  # 900 USD/h x 730 h
    assert budget["costFilters"] == [{"name": "TagKeyValue", "values": ["user:gpufleet:cluster$train"]}]
    assert [n["threshold"] for n in budget["notifications"]] == [50, 80, 100]
    assert all(n["subscriberSnsTopicArns"][0].startswith("arn:aws:sns:us-east-1:") for n in budget["notifications"])


def test_the_budget_waits_for_the_topic_policy_that_lets_budgets_publish() -> None:
    plan = shipped("aws-train-p5")
    (policy,) = [p for p in of_type(plan, "aws:sns/topicPolicy:TopicPolicy") if p.name.endswith("-alarms")]
    assert "budgets.amazonaws.com" in json.loads(policy.inputs["policy"])["Statement"][0]["Principal"]["Service"]
    assert policy.urn in one(plan, "aws:budgets/budget:Budget").depends_on


def test_p5_lustre_is_encrypted_with_the_stack_key_in_the_groups_subnet() -> None:
    plan = shipped("aws-train-p5")
    fs = one(plan, FSX)
    key = one(plan, "aws:kms/key:Key")
    assert fs.inputs["deploymentType"] == "PERSISTENT_2" and fs.inputs["storageCapacity"] == 2400
    assert fs.inputs["kmsKeyId"].startswith("arn:aws:kms:us-east-1:")
    assert key.urn in fs.property_dependencies["kmsKeyId"]
    # The subnet the node group launches in (its one RDMA zone).
    (group_subnets,) = {tuple(one(plan, "aws:autoscaling/group:Group").property_dependencies["vpcZoneIdentifiers"])}
    assert set(fs.property_dependencies["subnetIds"]) == set(group_subnets)


def test_p5_lustre_security_group_admits_only_the_nodes_and_itself() -> None:
    plan = shipped("aws-train-p5")
    groups = {g.name: g for g in of_type(plan, SG)}
    nodes, lustre = groups["train-nodes"], groups["train-lustre"]
    assert "ingress" not in lustre.inputs or not lustre.inputs["ingress"]
    rules = of_type(plan, INGRESS)
    assert sorted((r.inputs["fromPort"], r.inputs["toPort"]) for r in rules) == [(988, 988), (988, 988),
                                                                               (1018, 1023), (1018, 1023)]
    for rule in rules:
        assert not {"cidrIpv4", "cidrIpv6", "prefixListId"} & set(rule.inputs)
        assert lustre.urn in rule.property_dependencies["securityGroupId"]
        assert set(rule.property_dependencies["referencedSecurityGroupId"]) <= {nodes.urn, lustre.urn}
    egress = [e for e in nodes.inputs["egress"] if e["fromPort"] in (988, 1018)]
    assert len(egress) == 2 and all(e["protocol"] == "tcp" for e in egress)


def test_p5_bootstrap_mounts_the_file_system() -> None:
    plan = shipped("aws-train-p5")
    fs = one(plan, FSX)
    (mount,) = cloud_config(plan)["mounts"]
    device, path, kind = mount[:3]
    assert (path, kind) == ("/data", "lustre")
    assert device.startswith("fs-") and ".fsx.us-east-1.amazonaws.com@tcp:/" in device
    assert fs.urn in one(plan, LT).property_dependencies["userData"]


def test_g6e_scales_to_min_on_the_gpu_utilisation_metric() -> None:
    plan = shipped("aws-infer-g6e")
    policy = one(plan, "aws:autoscaling/policy:Policy").inputs
    assert policy["policyType"] == "StepScaling" and policy["adjustmentType"] == "ExactCapacity"
    assert policy["stepAdjustments"] == [{"metricIntervalUpperBound": "0", "scalingAdjustment": 0}]
    assert policy["autoscalingGroupName"] == "gpufleet-infer-dev-l40s"
    (alarm,) = [a for a in of_type(plan, ALARM) if a.name.endswith("-idle")]
    assert alarm.inputs["metricName"] == "nvidia_smi_utilization_gpu" and alarm.inputs["namespace"] == "gpufleet"
    assert alarm.inputs["threshold"] == 5 and alarm.inputs["evaluationPeriods"] == 60
    assert alarm.inputs["comparisonOperator"] == "LessThanThreshold"
    assert alarm.inputs["alarmActions"][0].startswith("arn:aws:autoscaling:us-east-1:")
    assert ":policyName/" in alarm.inputs["alarmActions"][0]


def _variant(tmp_path: Path, stack: str, change: Any) -> Path:
    cluster = copy.deepcopy(read_cluster(stack))
    change(cluster)
    return write_stack(tmp_path, "variant", cluster)


def _errors(cluster: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecInvalid) as raised:
        resolve_cluster(cluster)
    return [(e.path, e.message) for e in raised.value.errors]


@pytest.mark.parametrize("tib", [1.8, 3.6, 2.45, 0.6])
def test_a_lustre_size_fsx_does_not_sell_exits_2_naming_the_field(tmp_path, monkeypatch, capsys, tib) -> None:
    from cli_run import run_main

    def shrink(cluster: dict[str, Any]) -> None:
        cluster["storage"]["shared"]["capacity_tib"] = tib

    path = _variant(tmp_path, "aws-train-p5", shrink)
    monkeypatch.chdir(tmp_path)
    assert run_main(monkeypatch, "plan", "--stack", "variant", "--stacks-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "storage.shared.capacity_tib" in err and "multiple of 2.4 TiB" in err
    assert path.exists()


@pytest.mark.parametrize("tib", [1.2, 2.4, 4.8, 9.6])
def test_lustre_sizes_fsx_sells_pass(tib) -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["storage"]["shared"]["capacity_tib"] = tib
    assert resolve_cluster(cluster).spec.storage.shared.capacity_gib == round(tib * 1000)


def test_idle_needs_room_to_scale_down_and_an_autoscaling_group() -> None:
    cluster = read_cluster("aws-infer-g6e")
    cluster["node_groups"][0]["size"] = {"min": 2, "desired": 2, "max": 2}
    assert any(path == "node_groups[0].idle" and "size.min" in message for path, message in _errors(cluster))
    cluster = read_cluster("aws-infer-g6e")
    cluster["node_groups"][0]["provisioner"] = "fleet"
    assert any(path == "node_groups[0].idle" and "EC2 Fleet" in message for path, message in _errors(cluster))


def test_alarm_target_must_be_a_topic_of_the_region() -> None:
    cluster = read_cluster("aws-train-p5")
    del cluster["monitoring"]["alarms"]["emails"]  # recipients of a brought topic are set on it
    cluster["monitoring"]["alarms"]["target"] = "arn:aws:sns:us-west-2:123456789012:ops"
    assert any(path == "monitoring.alarms.target" for path, _ in _errors(cluster))
    cluster["monitoring"]["alarms"]["target"] = "arn:aws:sns:us-east-1:123456789012:ops"
    assert resolve_cluster(cluster).spec.monitoring.alarms.target.endswith(":ops")


def test_a_brought_topic_gets_the_alarms_and_no_topic_is_created(tmp_path) -> None:
    def bring(cluster: dict[str, Any]) -> None:
        cluster["monitoring"]["alarms"]["target"] = "arn:aws:sns:us-east-1:123456789012:ops"
        del cluster["monitoring"]["alarms"]["emails"]

    plan = plan_stack(_variant(tmp_path, "aws-train-p5", bring))
    # Nobody of the stack's reads a topic of interruption events then, so none is made (the node's watcher acts).
    assert [t.name for t in of_type(plan, "aws:sns/topic:Topic")] == []
    assert all(a.inputs["alarmActions"] == ["arn:aws:sns:us-east-1:123456789012:ops"] for a in of_type(plan, ALARM))


def test_shared_mount_may_not_overlap_scratch() -> None:
    cluster = read_cluster("aws-train-p5")
    cluster["storage"]["shared"]["mount"] = "/scratch/data"
    assert any(path == "storage" and "overlap" in message for path, message in _errors(cluster))


OPTIONS = {
    "monitoring": lambda c: c.update(monitoring={"gpu_metrics": True}),
    "node_groups[0].idle": lambda c: c["node_groups"][0].update(idle={"gpu_util_below": 5, "for_minutes": 60}),
    "budget.alert_at_percent": lambda c: c.setdefault("budget", {}).update(max_hourly_usd=5000, alert_at_percent=[80]),
    "storage.shared": lambda c: c.setdefault("storage", {}).update(shared={"capacity_tib": 2.4, "mount": "/data"}),
    "monitoring.alarms.emails": lambda c: c.update(monitoring={"alarms": {"emails": ["oncall@example.com"]}}),
}


OPERATION = {"monitoring": "monitoring", "node_groups[0].idle": "idle", "budget.alert_at_percent": "budget_alerts",
             "storage.shared": "shared_storage", "monitoring.alarms.emails": "alarm_emails"}
NOT_BUILT = [
    (stack, path)
    for stack in ("azure-train-ndh100", "alicloud-train-ebmgn8v")
    for path in sorted(OPTIONS)
    if OPERATION[path] not in backend(read_cluster(stack)["cloud"]).operations
]


@pytest.mark.parametrize(("stack", "path"), NOT_BUILT)
def test_clouds_refuse_each_option_they_have_not_built_by_name(stack, path) -> None:
    cluster = read_cluster(stack)
    OPTIONS[path](cluster)
    cloud = cluster["cloud"]
    gap = backend(cloud).operation_gaps[OPERATION[path]]
    assert (path, f"not available on {cloud}: {gap}; remove it") in _errors(cluster)


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_each_option_is_built_or_has_a_gap_that_says_why(cloud: str) -> None:
    cloud_backend = backend(cloud)
    assert cloud_backend.operations.isdisjoint(cloud_backend.operation_gaps)
    assert cloud_backend.operations | set(cloud_backend.operation_gaps) == set(OPERATION.values())
