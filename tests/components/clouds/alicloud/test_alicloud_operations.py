"""Alibaba Cloud operations options as the engine records them: gpufleet-gpu-health in the bootstrap publishing into the
cluster's CloudMonitor application group, alarm rules per group with their contact group, the node role's grants,
idle scale-down by an ESS alarm task on the GPU metric; budget alerts and CPFS refused by name with the gap; and
the node script's Alibaba part under stubs."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from bootstrap_node import Node, config, xid_lines
from conftest import of_type, one, read_cluster, write_stack
from conftest import shipped_plan as shipped

from components.bootstrap.operations import DCGM_UP_METRIC, GpuMetrics
from components.clouds.alicloud.alarms import seeded_metrics
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

TRAIN = "alicloud-train-ebmgn8v"
INFER = "alicloud-infer-gn7i"
CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
LT = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
RULE = "pulumi-python:dynamic/alicloud:CustomMetricRule"  # PutCustomMetricRule (custom_metric_rule.py)
APP_GROUP = "alicloud:cms/monitorGroup:MonitorGroup"
CONTACTS = "alicloud:cms/alarmContactGroup:AlarmContactGroup"
ESS_ALARM = "alicloud:ess/alarm:Alarm"
SCALING_RULE = "alicloud:ess/scalingRule:ScalingRule"
GROUP = "alicloud:ess/scalingGroup:ScalingGroup"


def cloud_config(plan: PlanResult, typ: str) -> dict[str, Any]:
    return libyaml_files.load(base64.b64decode(one(plan, typ).inputs["userData"]))


def settings(plan: PlanResult, typ: str) -> str:
    (found,) = [f for f in cloud_config(plan, typ)["write_files"] if f["path"] == "/etc/gpufleet/bootstrap.env"]
    return found["content"]


def test_train_bootstrap_runs_gpu_health_into_the_clusters_application_group() -> None:
    plan = shipped(TRAIN)
    document = cloud_config(plan, CONFIG)
    paths = {f["path"] for f in document["write_files"]}
    assert "/usr/local/sbin/gpufleet-gpu-health" in paths
    assert not [p for p in paths if "amazon-cloudwatch-agent" in p]
    assert "nvidia-dcgm.service" in document["runcmd"][1] and "gpufleet-gpu-health.service" in document["runcmd"][1]
    app_group = one(plan, APP_GROUP)
    env = settings(plan, CONFIG)
    key = "GPUFLEET_METRICS_NAMESPACE="
    (namespace,) = [line.removeprefix(key) for line in env.splitlines() if line.startswith(key)]
    assert namespace.isdigit() and namespace != "0" * 20  # the group's id, not the size-check placeholder
    assert "GPUFLEET_METRICS_GROUP=gpufleet-train-dev-h20\n" in env
    assert "GPUFLEET_SCALING_GROUP=gpufleet-train-dev-h20\n" in env
    # The user data waits for the application group: its id is rendered in.
    assert app_group.urn in one(plan, CONFIG).property_dependencies["userData"]


def test_shipped_script_is_the_shared_watch_with_the_alibaba_part_only() -> None:
    import gzip

    (packed,) = [f for f in cloud_config(shipped(TRAIN), CONFIG)["write_files"]
                 if f["path"] == "/usr/local/sbin/gpufleet-gpu-health"]
    script = gzip.decompress(base64.b64decode(packed["content"])).decode()
    assert "aliyun --mode StsToken" in script and "cms PutCustomMetric" in script
    assert "ess SetInstanceHealth" in script and "aws cloudwatch" not in script


def test_node_role_may_publish_metrics_and_mark_only_its_own_groups_unhealthy() -> None:
    plan = shipped(TRAIN)
    (policy,) = [p for p in of_type(plan, "alicloud:ram/policy:Policy") if p.name == "train-node-node"]
    statements = json.loads(policy.inputs["policyDocument"])["Statement"]
    assert {"Effect": "Allow", "Action": ["cms:PutCustomMetric"], "Resource": ["*"]} in statements
    (ess,) = [s for s in statements if "ess:SetInstanceHealth" in s["Action"]]
    (resource,) = ess["Resource"]
    assert resource.startswith("acs:ess:cn-wulanchabu:") and ":scalinggroup/asg-" in resource


def test_without_gpu_metrics_the_node_role_gets_neither_grant(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["monitoring"] = {"gpu_metrics": False}
    plan = plan_stack(write_stack(tmp_path, "quiet", cluster))
    # Nothing left to grant (no OSS prefixes; hooks are the gate role's): RAM takes no empty policy, so none.
    assert not [p for p in of_type(plan, "alicloud:ram/policy:Policy") if "NodeIdentity" in p.urn]
    assert not [a for a in of_type(plan, "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")
                if "NodeIdentity" in a.urn]
    assert not of_type(plan, APP_GROUP) and "gpufleet-gpu-health" not in json.dumps(cloud_config(plan, CONFIG))


def test_train_alarms_when_dcgm_stops_answering_a_node() -> None:
    # Before: a DCGM outage published 0 % utilisation and zero errors, and nothing alarmed.
    (rule,) = [r.inputs for r in of_type(shipped(TRAIN), RULE) if r.inputs["metric_name"] == DCGM_UP_METRIC]
    assert (rule["statistics"], rule["comparison_operator"], rule["threshold"], rule["evaluation_count"]) == (
        "Minimum", "<", "1", 1)
    assert rule["email_subject"].endswith("DCGM did not answer on a node: its GPU error and utilisation metrics are "
                                          "not being read")
    assert seeded_metrics(rules=True, idle=False)[DCGM_UP_METRIC] == 1  # seeded with a value that alarms on nothing


def test_train_alarms_on_each_reason_a_node_is_taken_out_and_low_utilisation_notify_the_contact_group() -> None:
    plan = shipped(TRAIN)
    contacts, app_group = one(plan, CONTACTS), one(plan, APP_GROUP)
    assert app_group.inputs["contactGroups"] == [contacts.inputs["alarmContactGroupName"]]
    rules = {r.inputs["metric_name"]: r for r in of_type(plan, RULE)}
    taken_out = ("gpu_fatal_xid_errors", "gpu_ecc_uncorrectable", "gpu_row_remap_failures", "nodecheck_failed")
    assert set(rules) == {"gpu_xid_errors", *taken_out, "gpu_utilization", "dcgm_up"}
    # Each rule's mail subject says what it checks.
    subjects = {metric: rule.inputs["email_subject"] for metric, rule in rules.items()}
    assert subjects["gpu_xid_errors"].endswith("GPUs logged new XID errors this minute (most are application errors; "
                                               "the node stays)")
    assert "fatal XID (48, 64, 74, 79, 95, 119, 120)" in subjects["gpu_fatal_xid_errors"]
    assert "row remapping failed" in subjects["gpu_row_remap_failures"]
    assert "row remap" not in subjects["gpu_ecc_uncorrectable"] and "double-bit" in subjects["gpu_ecc_uncorrectable"]
    assert all(subjects[m].endswith("leaves its group") for m in taken_out)
    assert subjects["gpu_utilization"].endswith("GPU utilisation under 10% for 120 minutes")
    for rule in rules.values():
        # The series the nodes publish into the application group (GroupId, Dimensions {"NodeGroup": ...}), as
        # PutCustomMetricRule's Resources name them: the group's id and the dimension as key=value.
        assert json.loads(rule.inputs["resources"]) == [
            {"groupId": int(rule.inputs["group_id"]), "dimension": "NodeGroup=gpufleet-train-dev-h20"}]
        assert app_group.urn in rule.property_dependencies["group_id"]
        assert app_group.urn in rule.property_dependencies["resources"]
        assert rule.inputs["contact_groups"] == contacts.inputs["alarmContactGroupName"]
        assert contacts.urn in rule.property_dependencies["contact_groups"]
        assert (rule.inputs["level"], rule.inputs["period"], rule.inputs["region"]) == ("CRITICAL", "60",
                                                                                          "cn-wulanchabu")
        assert "namespace" not in rule.inputs  # custom monitoring data is named by group and dimension
        assert rule.inputs["rule_id"].startswith(rule.inputs["rule_name"] + "-")  # hashed with region and account
    for metric in ("gpu_xid_errors", *taken_out):
        check = {k: rules[metric].inputs[k] for k in ("statistics", "comparison_operator", "threshold",
                                                       "evaluation_count")}
        assert check == {"statistics": "Maximum", "comparison_operator": ">", "threshold": "0", "evaluation_count": 1}
    low = rules["gpu_utilization"].inputs
    assert (low["statistics"], low["comparison_operator"], low["threshold"], low["evaluation_count"]) == (
        "Average", "<", "10", 120)


def test_a_named_contact_group_gets_the_alarms_and_none_is_created(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["monitoring"]["alarms"] = {"target": "ml-oncall"}
    plan = plan_stack(write_stack(tmp_path, "named", cluster))
    assert not of_type(plan, CONTACTS)
    assert {r.inputs["contact_groups"] for r in of_type(plan, RULE)} == {"ml-oncall"}


CONTACT = "alicloud:cms/alarmContact:AlarmContact"
EVENT_RULE = "alicloud:cms/eventRule:EventRule"


@pytest.mark.parametrize("stack", [TRAIN, INFER])
def test_created_contact_group_holds_a_mailed_contact_per_address_and_gets_the_interruption_notices(stack) -> None:
    plan = shipped(stack)
    emails = read_cluster(stack)["monitoring"]["alarms"]["emails"]
    contacts = of_type(plan, CONTACT)
    assert sorted(c.inputs["channelsMail"] for c in contacts) == sorted(emails) and emails
    group = one(plan, CONTACTS)
    assert group.inputs["contacts"] == [c.inputs["alarmContactName"] for c in contacts]
    assert all(c.urn in group.property_dependencies["contacts"] for c in contacts)
    # Spot reclaims reach the same people as the alarms, besides the logstore.
    (target,) = one(plan, EVENT_RULE).inputs["contactParameters"]
    assert target["contactGroupName"] == group.inputs["alarmContactGroupName"]
    assert group.urn in one(plan, EVENT_RULE).property_dependencies["contactParameters"]


def test_each_address_gets_its_own_contact_name(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["monitoring"]["alarms"]["emails"] = ["a@example.com", "b@example.com"]
    names = [c.inputs["alarmContactName"] for c in of_type(plan_stack(write_stack(tmp_path, "two", cluster)),
                                                             CONTACT)]
    assert len(set(names)) == 2 and all(n.startswith("gpufleet_train_") and len(n) <= 40 for n in names)
    # Two stacks in two regions: tests/components/clouds/test_names.py (account-wide names differ by region).


def test_without_alarms_the_interruption_events_are_an_audit_trail_only(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(INFER))
    del cluster["monitoring"]["alarms"]
    plan = plan_stack(write_stack(tmp_path, "no-alarms", cluster))
    assert not of_type(plan, CONTACT) and not of_type(plan, CONTACTS)
    assert "contactParameters" not in one(plan, EVENT_RULE).inputs


def test_infer_scales_to_min_by_an_ess_alarm_task_on_the_gpu_utilisation_metric() -> None:
    plan = shipped(INFER)
    rule = one(plan, SCALING_RULE)
    assert rule.inputs["adjustmentType"] == "TotalCapacity" and rule.inputs["adjustmentValue"] == 0
    assert rule.inputs["scalingRuleType"] == "SimpleScalingRule"
    group = one(plan, GROUP)
    assert group.urn in rule.property_dependencies["scalingGroupId"]
    alarm = one(plan, ESS_ALARM)
    inputs = alarm.inputs
    assert inputs["metricType"] == "custom" and inputs["metricName"] == "gpu_utilization"
    assert inputs["comparisonOperator"] == "<" and inputs["threshold"] == "5" and inputs["statistics"] == "Average"
    assert inputs["period"] * inputs["evaluationCount"] == 60 * 60
    assert inputs["dimensions"] == {"NodeGroup": "gpufleet-infer-dev-a10"}
    assert rule.urn in alarm.property_dependencies["alarmActions"]
    assert inputs["alarmActions"][0].startswith("ari:acs:ess:cn-beijing:") and ":scalingrule/asr-" in inputs[
        "alarmActions"][0]
    assert one(plan, APP_GROUP).urn in alarm.property_dependencies["cloudMonitorGroupId"]


def _errors(cluster: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecInvalid) as raised:
        resolve_cluster(cluster)
    return [(e.path, e.message) for e in raised.value.errors]


def test_idle_needs_an_ess_scaling_group() -> None:
    cluster = read_cluster(INFER)
    cluster["node_groups"][0].update(provisioner="fleet", spot_max_price=2.5)
    assert any(path == "node_groups[0].idle" and "Auto Provisioning Group" in message
               for path, message in _errors(cluster))


def test_alarm_target_must_be_a_contact_group_name() -> None:
    cluster = read_cluster(TRAIN)
    cluster["monitoring"]["alarms"] = {"target": "arn:aws:sns:us-east-1:123456789012:ops"}
    assert any(path == "monitoring.alarms.target" and "contact group" in message for path, message in _errors(cluster))


@pytest.mark.parametrize(("path", "change", "gap"), [
    ("budget.alert_at_percent", {"budget": {"max_hourly_usd": 500, "alert_at_percent": [80]}}, "no budget resource"),
    ("storage.shared", {"storage": {"shared": {"capacity_tib": 3.6, "mount": "/data"}}}, "only for extreme NAS"),
])
def test_options_alibaba_cannot_build_exit_2_naming_the_field_and_the_gap(
    tmp_path, monkeypatch, capsys, path, change, gap
) -> None:
    from cli_run import run_main

    cluster = copy.deepcopy(read_cluster(TRAIN))
    for key, value in change.items():
        cluster.setdefault(key, {}).update(value)
    write_stack(tmp_path, "variant", cluster)
    monkeypatch.chdir(tmp_path)
    assert run_main(monkeypatch, "plan", "--stack", "variant", "--stacks-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert path in err and "not available on alicloud" in err and gap in err


# The node script's Alibaba part, under stubs

DMON = """#Entity   DBETO  UCRRW  RRF    NCRCT  GPUTL
ID
GPU 0     0      0      0      0      40
GPU 1     {dbe}      2      0      N/A    {util}
"""


CREDS = json.dumps({"Code": "Success", "AccessKeyId": "STS.id", "AccessKeySecret": "sec", "SecurityToken": "sts",
                    "Expiration": "2026-11-22T10:00:00Z"})


def alibaba_health_node(tmp_path: Path, xid: int, dbe: int, util: int = 20, scaling_group: str | None = "g1") -> Node:
    metrics = GpuMetrics("12345678", "gpufleet-train-dev-h20", "cn-wulanchabu", scaling_group=scaling_group)
    node = Node(tmp_path, config("alicloud", gpu_metrics=metrics))
    node.stub("dcgmi", f"cat <<'OUT'\n{DMON.format(dbe=dbe, util=util)}OUT")
    node.kernel_log(xid_lines(xid))
    node.stub("aliyun", "exit 0")
    node.curl({"api/token": "tok-1", "meta-data/instance-id": "i-2ze0abc", "security-credentials/train-node": CREDS,
               "security-credentials/": "train-node"})
    return node


def test_alibaba_gpu_health_publishes_custom_metrics_into_the_application_group(tmp_path) -> None:
    node = alibaba_health_node(tmp_path, xid=13, dbe=0)
    assert node.run("gpufleet-gpu-health", "--once").returncode == 0
    (put,) = [c for c in node.calls() if c.startswith("aliyun ") and "PutCustomMetric" in c]
    assert put.startswith("aliyun --mode StsToken --region cn-wulanchabu cms ")
    words = put.split()
    values = {words[i + 1]: words[i + 7] for i, w in enumerate(words) if w.endswith(".MetricName")}
    assert values == {name: f'{{"value":{v}}}' for name, v in {
        "gpu_xid_errors": 1, "gpu_fatal_xid_errors": 0, "gpu_ecc_uncorrectable": 0, "gpu_row_remap_failures": 0,
        "gpu_uncorrectable_remapped_rows": 2, "gpu_nvlink_crc_errors": 0, "nodecheck_failed": 0, "dcgm_up": 1,
        "gpu_utilization": 30, "gpu_memory_used_mib": 0, "gpu_power_draw_watts": 0, "gpu_temperature_max": 0}.items()}
    assert put.count("--MetricList.1.GroupId 12345678") == 1 and '{"NodeGroup":"gpufleet-train-dev-h20"}' in put
    assert not [c for c in node.calls() if "SetInstanceHealth" in c]


@pytest.mark.parametrize(("xid", "dbe"), [(79, 0), (0, 1)])
def test_alibaba_gpu_health_marks_a_broken_node_unhealthy_in_ess_once(tmp_path, xid, dbe) -> None:
    node = alibaba_health_node(tmp_path, xid=xid, dbe=dbe)
    node.run("gpufleet-gpu-health", "--once")
    node.run("gpufleet-gpu-health", "--once")
    marked = [c for c in node.calls() if "SetInstanceHealth" in c]
    assert marked == ["aliyun --mode StsToken --region cn-wulanchabu ess "
                      "SetInstanceHealth --InstanceId i-2ze0abc --HealthStatus Unhealthy"]


def test_alibaba_gpu_health_on_a_fleet_group_publishes_but_marks_nothing(tmp_path) -> None:
    node = alibaba_health_node(tmp_path, xid=79, dbe=0, scaling_group=None)
    node.run("gpufleet-gpu-health", "--once")
    assert [c for c in node.calls() if "PutCustomMetric" in c]
    assert not [c for c in node.calls() if "SetInstanceHealth" in c]
