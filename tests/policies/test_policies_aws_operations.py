"""AWS operations rules: GPU metrics on node groups, alarm targets, the shared file system's key and reach."""

from __future__ import annotations

import base64
import gzip

from aws_rule_args import CMK, LT, validate
from stack_rule_args import SG, messages, res, urn

ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def user_data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_gpu_metrics_missing_is_advised() -> None:
    (message,) = validate("aws-node-gpu-metrics", LT, {"userData": user_data("#cloud-config\nruncmd: []\n")})
    assert "ships no GPU metrics" in message and "monitoring.gpu_metrics" in message


def test_gpu_metrics_configured_passes() -> None:
    config = '{"metrics":{"metrics_collected":{"nvidia_gpu":{"measurement":["utilization_gpu"]}}}}'
    assert validate("aws-node-gpu-metrics", LT, {"userData": user_data(f"#cloud-config\n# {config}\n")}) == []


def test_gzipped_user_data_is_read_as_cloud_init_reads_it() -> None:
    # EKS nodes' user data is gzipped whole (EC2's 16 KB): the rule unpacks it before looking, both ways.
    config = '{"metrics":{"metrics_collected":{"nvidia_gpu":{"measurement":["utilization_gpu"]}}}}'
    packed = base64.b64encode(gzip.compress(f"#cloud-config\n# {config}\n".encode())).decode()
    assert validate("aws-node-gpu-metrics", LT, {"userData": packed}) == []
    bare = base64.b64encode(gzip.compress(b"#cloud-config\nruncmd: []\n")).decode()
    assert len(validate("aws-node-gpu-metrics", LT, {"userData": bare})) == 1


def test_alarm_without_actions_is_advised() -> None:
    (message,) = validate("aws-alarm-has-target", ALARM, {"metricName": "gpu_xid_errors", "alarmActions": []})
    assert "notifies no one" in message


def test_alarm_with_a_topic_passes() -> None:
    props = {"metricName": "gpu_xid_errors", "alarmActions": ["arn:aws:sns:us-east-1:111122223333:ops"]}
    assert validate("aws-alarm-has-target", ALARM, props) == []


def test_lustre_on_the_aws_managed_key_fails() -> None:
    (message,) = validate("aws-shared-fs-customer-key", FSX, {"deploymentType": "SCRATCH_2"})
    assert "AWS-managed key" in message
    assert validate("aws-shared-fs-customer-key", FSX, {"kmsKeyId": "alias/aws/fsx"})


def test_lustre_on_a_customer_key_passes() -> None:
    assert validate("aws-shared-fs-customer-key", FSX, {"deploymentType": "PERSISTENT_2", "kmsKeyId": CMK}) == []


def _stack(*rules: dict) -> list:
    template = res(LT, "lt", {"networkInterfaces": [{"securityGroups": ["sg-nodes"]}]})
    fs = res(FSX, "fs", {"securityGroupIds": ["sg-lustre"], "kmsKeyId": CMK})
    ingress = [res(INGRESS, f"in-{i}", {"securityGroupId": "sg-lustre", "ipProtocol": "tcp", "fromPort": 988,
                                         "toPort": 988, **rule}) for i, rule in enumerate(rules)]
    return [template, res(SG, "lustre", {"vpcId": "vpc-1"}), fs, *ingress]


def test_lustre_open_to_an_address_range_fails() -> None:
    found = messages("aws-shared-fs-nodes-only", _stack({"referencedSecurityGroupId": "sg-nodes"},
                                                        {"cidrIpv4": "10.0.0.0/8"}))
    assert found == [(urn(INGRESS, "in-1"), found[0][1])] and "admits addresses (10.0.0.0/8)" in found[0][1]


def test_lustre_open_to_another_group_fails() -> None:
    ((where, message),) = messages("aws-shared-fs-nodes-only", _stack({"referencedSecurityGroupId": "sg-other"}))
    assert where == urn(INGRESS, "in-0") and "sg-other" in message


def test_lustre_open_to_the_nodes_and_itself_passes() -> None:
    stack = _stack({"referencedSecurityGroupId": "sg-nodes"}, {"referencedSecurityGroupId": "sg-lustre"})
    assert messages("aws-shared-fs-nodes-only", stack) == []


TOPIC = "aws:sns/topic:Topic"
SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
BUDGET = "aws:budgets/budget:Budget"


def _notified_topic(*subscribers: str, notifier: str = ALARM) -> list:
    topic = res(TOPIC, "alarms", {"kmsMasterKeyId": CMK})
    notifying = res(notifier, "xid", {"metricName": "gpu_xid_errors"},
                    property_dependencies={"alarmActions" if notifier == ALARM else "notifications": (topic.urn,)})
    subs = [res(SUBSCRIPTION, f"sub-{e}", {"protocol": "email", "endpoint": e}, property_dependencies={"topic": (
        topic.urn,)}) for e in subscribers]
    return [topic, notifying, *subs]


def test_a_notified_topic_with_nobody_subscribed_fails() -> None:
    for notifier in (ALARM, BUDGET):
        ((where, message),) = messages("aws-alarm-topic-subscribed", _notified_topic(notifier=notifier))
        assert where == urn(TOPIC, "alarms") and "monitoring.alarms.emails" in message


def test_a_notified_topic_with_a_subscriber_passes_and_an_unnotified_one_is_not_judged() -> None:
    assert messages("aws-alarm-topic-subscribed", _notified_topic("oncall@example.com")) == []
    assert messages("aws-alarm-topic-subscribed", [res(TOPIC, "interruptions", {})]) == []


def test_shipped_training_stacks_pass_the_operations_rules(shipped_plans) -> None:
    names = {"aws-node-gpu-metrics", "aws-alarm-has-target", "aws-shared-fs-customer-key", "aws-shared-fs-nodes-only",
             "aws-alarm-topic-subscribed"}
    for stack in ("aws-train-p5", "aws-train-eks"):  # the EKS stack sets gpu_metrics in gzipped user data
        plan = shipped_plans[stack]
        assert plan.policies["evaluated"] > 0
        assert [v for v in plan.policies["violations"] if v["policy"] in names] == [], stack
