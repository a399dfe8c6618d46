"""Azure alarms reach a person and say what they check: the created action group mails monitoring.alarms.emails
(no Owner role receiver, which reaches only direct subscription owners), a created action group without receivers
is a mandatory finding, and each scale set has a fatal-XID and a row-remap alert beside the ECC one, each described
by the metric it reads."""

from __future__ import annotations

from pathlib import Path

from azure_plans import TRAIN, one, plan_variant, shipped, variant
from conftest import of_type
from stack_rule_args import messages, res

ACTION_GROUP = "azure-native:monitor:ActionGroup"
ALERT = "azure-native:monitor:MetricAlert"
RULE = "azure-action-group-has-recipients"


def _alerts(plan) -> dict:
    return {a.inputs["criteria"]["allOf"][0]["metricName"]: a for a in of_type(plan, ALERT)}


def test_the_created_action_group_mails_the_stacks_emails_and_no_owner_role() -> None:
    group = one(shipped(TRAIN), ACTION_GROUP)
    assert group.inputs["emailReceivers"] == [
        {"name": "email-1", "emailAddress": "oncall@example.com", "useCommonAlertSchema": True}]
    assert "armRoleReceivers" not in group.inputs


def test_a_created_action_group_without_emails_fails_the_plan(tmp_path: Path) -> None:
    cluster = variant(TRAIN)
    del cluster["monitoring"]["alarms"]["emails"]
    plan = plan_variant(tmp_path, cluster)
    (found,) = [v for v in plan.policies["violations"] if v["policy"] == RULE]
    assert found["level"] == "mandatory" and "reach no one" in found["message"]
    assert found["urn"] == one(plan, ACTION_GROUP).urn


def test_the_rule_passes_any_receiver_and_fails_none() -> None:
    (where, message), = messages(RULE, [res(ACTION_GROUP, "alerts", {"groupShortName": "gf"})])
    assert "monitoring.alarms.emails" in message
    assert messages(RULE, [res(ACTION_GROUP, "alerts", {"smsReceivers": [{"name": "a"}]})]) == []


def test_fatal_xid_and_row_remap_failures_alert_per_scale_set() -> None:
    alerts = _alerts(shipped(TRAIN))
    fatal, remap = alerts["gpu_fatal_xid_errors"].inputs, alerts["gpu_row_remap_failures"].inputs
    assert fatal["criteria"]["allOf"][0]["timeAggregation"] == "Total"  # a count per minute, summed
    assert remap["criteria"]["allOf"][0]["timeAggregation"] == "Maximum"
    assert "fatal XID" in fatal["description"] and "row remapping failed" in remap["description"]


def test_each_alert_describes_only_what_its_metric_measures() -> None:
    alerts = _alerts(shipped(TRAIN))
    ecc = alerts["gpu_ecc_uncorrectable"].inputs["description"]
    assert "ECC" in ecc and "remap" not in ecc
    assert "new XID" in alerts["gpu_xid_errors"].inputs["description"]
