"""Alibaba Cloud operations rules: GPU metrics on node groups, alarm targets, a shared file system's key and reach."""

from __future__ import annotations

import base64

from alicloud_rule_args import KMS_KEY_ID, LT, SC, VSWITCH, validate
from stack_rule_args import messages, res, urn

RULE = "alicloud:cms/groupMetricRule:GroupMetricRule"
ESS_ALARM = "alicloud:ess/alarm:Alarm"
NAS = "alicloud:nas/fileSystem:FileSystem"
ACCESS = "alicloud:nas/accessRule:AccessRule"


def user_data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_gpu_metrics_missing_is_advised() -> None:
    (message,) = validate("alicloud-node-gpu-metrics", SC, {"userData": user_data("#cloud-config\nruncmd: []\n")})
    assert "ships no GPU metrics" in message and "monitoring.gpu_metrics" in message


def test_gpu_metrics_configured_passes() -> None:
    text = "#cloud-config\nwrite_files:\n- path: /usr/local/sbin/gpufleet-gpu-health\n"
    assert validate("alicloud-node-gpu-metrics", LT, {"userData": user_data(text)}) == []


def test_alarm_rule_without_contacts_and_alarm_task_without_rule_are_advised() -> None:
    (message,) = validate("alicloud-alarm-has-target", RULE, {"metricName": "gpu_xid_errors", "contactGroups": ""})
    assert "notifies no one" in message
    (message,) = validate("alicloud-alarm-has-target", ESS_ALARM, {"metricName": "gpu_utilization",
                                                                   "alarmActions": []})
    assert "runs no scaling rule" in message


def test_alarm_rule_with_contacts_and_alarm_task_with_a_rule_pass() -> None:
    assert validate("alicloud-alarm-has-target", RULE, {"contactGroups": "gpufleet-train-alarms"}) == []
    ari = "ari:acs:ess:cn-beijing:5123456789012345:scalingrule/asr-1"
    assert validate("alicloud-alarm-has-target", ESS_ALARM, {"alarmActions": [ari]}) == []


CUSTOM_RULE = "pulumi-python:dynamic/alicloud:CustomMetricRule"


def test_custom_metric_rule_without_contacts_is_advised_and_with_them_passes() -> None:
    """gpufleet's PutCustomMetricRule rules take the API's parameter names (contact_groups)."""
    (message,) = validate("alicloud-alarm-has-target", CUSTOM_RULE, {"metric_name": "gpu_xid_errors",
                                                                     "contact_groups": ""})
    assert "notifies no one" in message
    assert validate("alicloud-alarm-has-target", CUSTOM_RULE, {"contact_groups": "gpufleet-train-alarms"}) == []


CONTACT_GROUP = "alicloud:cms/alarmContactGroup:AlarmContactGroup"


def test_created_contact_group_without_contacts_fails_and_with_one_passes() -> None:
    """The group as gpufleet created it before monitoring.alarms.emails: nobody in it."""
    for props in ({"alarmContactGroupName": "gpufleet-train-alarms"},
                  {"alarmContactGroupName": "gpufleet-train-alarms", "contacts": []}):
        (message,) = validate("alicloud-alarm-contacts", CONTACT_GROUP, props)
        assert "has no contacts" in message and "monitoring.alarms.emails" in message
    props = {"alarmContactGroupName": "gpufleet-train-alarms", "contacts": ["gpufleet_train_1a2b3c4d"]}
    assert validate("alicloud-alarm-contacts", CONTACT_GROUP, props) == []


def test_file_system_without_a_customer_key_fails() -> None:
    (message,) = validate("alicloud-shared-fs-customer-key", NAS, {"fileSystemType": "cpfs", "protocolType": "cpfs"})
    assert "not encrypted with a customer KMS key" in message
    assert validate("alicloud-shared-fs-customer-key", NAS, {"fileSystemType": "extreme", "encryptType": 1})


def test_file_system_on_a_customer_key_passes() -> None:
    props = {"fileSystemType": "extreme", "encryptType": 2, "kmsKeyId": KMS_KEY_ID}
    assert validate("alicloud-shared-fs-customer-key", NAS, props) == []


def _stack(*sources: str) -> list:
    vswitch = res(VSWITCH, "nodes", {"cidrBlock": "10.42.0.0/18", "zoneId": "cn-wulanchabu-c"})
    rules = [res(ACCESS, f"rule-{i}", {"accessGroupName": "data", "sourceCidrIp": source, "priority": 1})
             for i, source in enumerate(sources)]
    return [vswitch, *rules]


def test_access_rule_beyond_the_nodes_fails() -> None:
    found = messages("alicloud-shared-fs-nodes-only", _stack("10.42.1.0/24", "0.0.0.0/0"))
    assert [where for where, _ in found] == [urn(ACCESS, "rule-1")]
    assert "admits 0.0.0.0/0, beyond the nodes' vSwitches" in found[0][1]


def test_access_rule_within_the_node_vswitches_passes() -> None:
    assert messages("alicloud-shared-fs-nodes-only", _stack("10.42.0.0/18", "10.42.3.7/32")) == []


def test_shipped_stacks_pass_the_operations_rules(shipped_plans) -> None:
    names = {"alicloud-node-gpu-metrics", "alicloud-alarm-has-target", "alicloud-shared-fs-customer-key",
             "alicloud-shared-fs-nodes-only"}
    for stack in ("alicloud-train-ebmgn8v", "alicloud-infer-gn7i"):
        plan = shipped_plans[stack]
        assert plan.policies["evaluated"] > 0
        assert [v for v in plan.policies["violations"] if v["policy"] in names] == []


def test_an_arms_contact_group_without_contacts_is_blocked() -> None:
    group = "alicloud:arms/alertContactGroup:AlertContactGroup"
    (message,) = validate("alicloud-alarm-contacts", group, {"alertContactGroupName": "gpufleet-x-alarms",
                                                              "contactIds": []})
    assert "has no contacts" in message
    assert validate("alicloud-alarm-contacts", group, {"contactIds": ["1000002"]}) == []


def test_an_arms_alert_rule_outside_a_notification_policy_is_advised() -> None:
    rule = "alicloud:arms/prometheusAlertRule:PrometheusAlertRule"
    (message,) = validate("alicloud-alarm-has-target", rule, {"notifyType": "ALERT_MANAGER"})
    assert "notification policy" in message
    assert validate("alicloud-alarm-has-target", rule, {"notifyType": "DISPATCH_RULE",
                                                         "dispatchRuleId": "1000003"}) == []
