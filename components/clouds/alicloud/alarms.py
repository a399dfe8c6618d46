"""CloudMonitor alarms per node group on the GPU metrics (new and fatal XID errors, uncorrectable ECC, row-remap
failures, node-check failures, low utilisation), the contact group they notify, and idle scale-down to the group's
min through an ESS alarm task.

Metric source: gpufleet-gpu-health publishes CloudMonitor custom metrics (PutCustomMetric) into the cluster's
application group with the dimension NodeGroup (bootstrap/scripts/gpu-health.sh; README, Operate). A node with a fatal
XID, uncorrectable ECC, a row-remap failure or a failed node check marks itself unhealthy in its ESS group
(SetInstanceHealth), which releases and replaces it; these alarms tell people. The XID metrics are counts of the
XIDs the kernel logged in each minute (gpu-health.sh), so an alarm clears once they stop.

The rules are CloudMonitor's rules for custom monitoring data, PutCustomMetricRule (custom_metric_rule.py: the API
reference documents it for data reported with PutCustomMetric, and PutGroupMetricRule for a cloud service's
namespace; no provider resource calls it, so a dynamic resource does, with the deployer's credentials). Each reads
its metric in the application group on the series of its node group: Resources `[{"groupId", "dimension":
"NodeGroup=<group>"}]`, the dimension as `key=value` of what the nodes publish (`{"NodeGroup": "<group>"}`).

A contact group has no encryption setting (cms.AlarmContactGroup takes a name, contacts and a description): what
the alarms carry is metric names and thresholds. A created contact group holds one alarm contact per address of
`monitoring.alarms.emails` (cms.AlarmContact channels_mail): CloudMonitor mails each an activation link and adds
the person to its alarm contacts only once it is followed (PutContact, Channels.Mail), as SNS subscriptions wait
for confirmation on AWS.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.alicloud.names import CONTACT, NAMES
from gpufleet.clouds.naming import fit
from gpufleet.stackfile.models import Idle
from gpufleet.stackfile.monitoring import LowUtilisation

from ...bootstrap.operations import DCGM_DOWN_TEXT, DCGM_UP_METRIC, FATAL_XID_TEXT, GPU_UTILISATION_CUSTOM_METRIC
from .custom_metric_rule import CustomMetricRule

PERIOD_SECONDS = 60
# PutCustomMetricRule's ComparisonOperator takes symbols (>=, =, <=, >, <, !=) and Level CRITICAL, WARN or INFO.
OVER, UNDER, LEVEL = ">", "<", "CRITICAL"
# The rules on a node's error counts, each alarming when one node's value in a minute is over 0: (rule, metric, what).
ERROR_CHECKS = (
    ("xid", "gpu_xid_errors", "GPUs logged new XID errors this minute (most are application errors; the node stays)"),
    ("fatal-xid", "gpu_fatal_xid_errors", f"a GPU logged a fatal XID ({FATAL_XID_TEXT}); the node leaves its group"),
    ("ecc", "gpu_ecc_uncorrectable", "uncorrectable (double-bit) ECC errors on a GPU; the node leaves its group"),
    ("row-remap", "gpu_row_remap_failures", "row remapping failed on a GPU; the node leaves its group"),
    ("nodecheck", "nodecheck_failed", "a node failed gpufleet-nodecheck; it leaves its group"),
)
# The value each metric is seeded with before its rules exist (metric_seed.py): one that alarms on nothing.
QUIET_ERRORS, BUSY_GPUS, DCGM_ANSWERED = 0, 100, 1


def seeded_metrics(rules: bool, idle: bool) -> dict[str, float]:
    """The metrics a node group's alarm rules (`rules`) and idle task (`idle`) read, each with its quiet value."""
    found: dict[str, float] = {metric: QUIET_ERRORS for _, metric, _ in ERROR_CHECKS} if rules else {}
    if rules:
        found[DCGM_UP_METRIC] = DCGM_ANSWERED
    if rules or idle:
        found[GPU_UTILISATION_CUSTOM_METRIC] = BUSY_GPUS
    return found


def contact_group(name: str, base: str, region: str, emails: list[str],
                  opts: pulumi.ResourceOptions) -> alicloud.cms.AlarmContactGroup:
    """The stack's contact group (its id is its name) with an alarm contact per email address; their names from
    `base`, the cluster in its environment (both are account-wide)."""
    contacts = [
        alicloud.cms.AlarmContact(
            f"{name}-contact-{email}",
            # Account-wide, and PutContact modifies a contact of the same name: the hash of region and address keeps
            # it this stack's and this person's (letters, digits, . and _ only: the cluster's dashes become _).
            alarm_contact_name=fit(f"gpufleet_{base.replace('-', '_')}", NAMES.limit(CONTACT, "alarmContactName"),
                                   region, email, sep="_"),
            describe=f"gpufleet {base}: GPU alarms and spot interruptions",
            channels_mail=email,
            opts=opts,
        )
        for email in emails
    ]
    return alicloud.cms.AlarmContactGroup(
        f"{name}-alarms",
        alarm_contact_group_name=fit(f"gpufleet-{base}-alarms", None, region),  # account-wide
        contacts=[contact.alarm_contact_name for contact in contacts],
        describe=f"gpufleet {base}: GPU alarms (XID, ECC, row remapping, node check, low utilisation) and spot "
        "interruptions",
        opts=opts,
    )


def metrics_group(
    name: str, base: str, region: str, contact: pulumi.Input[str] | None, tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> alicloud.cms.MonitorGroup:
    """The application group the nodes' custom metrics belong to (PutCustomMetric GroupId) and the alarms read."""
    return alicloud.cms.MonitorGroup(
        f"{name}-gpu-metrics",
        monitor_group_name=fit(f"gpufleet-{base}-gpu", None, region),  # account-wide
        contact_groups=[contact] if contact is not None else None,
        tags=tags,
        opts=opts,
    )


def _rule(
    name: str, rule: str, what: str, group: alicloud.cms.MonitorGroup, metric: str, group_name: str,
    region: str, account_id: pulumi.Output[str], check: tuple[str, str, float, int], contact: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> CustomMetricRule:
    """One rule; `what` is what it checks, the subject of its alarm mail; `check` is (statistic, comparison,
    threshold, minutes). Its id is account-wide (PutCustomMetricRule modifies the rule of an existing id), so it
    carries a hash of the region and account."""
    statistic, comparison, threshold, minutes = check
    base = f"{group_name}-{rule}"
    return CustomMetricRule(
        f"{name}-{rule}",
        {
            "rule_id": account_id.apply(lambda account: fit(base, None, region, account)),
            "rule_name": base,
            "email_subject": f"{group_name}: {what}",
            "group_id": group.id,
            "metric_name": metric,
            # Resources as the API reference's example writes them: the group's id a number, the dimension key=value
            # (DescribeCustomMetricList's Dimension: sampleName1=value1&sampleName2=value2).
            "resources": group.id.apply(
                lambda group_id: json.dumps([{"groupId": int(group_id), "dimension": f"NodeGroup={group_name}"}])),
            "period": str(PERIOD_SECONDS),
            "contact_groups": contact,
            "level": LEVEL,
            "statistics": statistic,
            "comparison_operator": comparison,
            "threshold": f"{threshold:g}",
            "evaluation_count": minutes,
            "region": region,
        },
        opts,
    )


def group_alarms(
    name: str, group_name: str, group: alicloud.cms.MonitorGroup, region: str, account_id: pulumi.Output[str],
    low: LowUtilisation, contact: pulumi.Input[str], opts: pulumi.ResourceOptions,
) -> list[CustomMetricRule]:
    """XID, fatal XID, ECC, row-remap, node-check and low-utilisation rules for one node group, on its NodeGroup
    dimension: a node's value over 0 in one minute alarms."""
    over = ("Maximum", OVER, 0, 1)
    rules = [_rule(name, rule, what, group, metric, group_name, region, account_id, over, contact, opts)
             for rule, metric, what in ERROR_CHECKS]
    rules.append(_rule(name, "dcgm-down", DCGM_DOWN_TEXT, group, DCGM_UP_METRIC, group_name, region, account_id,
                       ("Minimum", UNDER, 1, 1), contact, opts))
    rules.append(_rule(name, "low-util", f"GPU utilisation under {low.below_percent}% for {low.for_minutes} minutes",
                       group, GPU_UTILISATION_CUSTOM_METRIC, group_name, region, account_id,
                       ("Average", UNDER, low.below_percent, low.for_minutes), contact, opts))
    return rules


def idle_scale_down(
    name: str, scaling_group_id: pulumi.Input[str], group_name: str, group: alicloud.cms.MonitorGroup,
    min_size: int, idle: Idle, opts: pulumi.ResourceOptions,
) -> alicloud.ess.ScalingRule:
    """A simple scaling rule setting the group to its min (TotalCapacity), run by an ESS alarm task on the group's
    average GPU utilisation custom metric: Auto Scaling's own mechanism, no controller of gpufleet's."""
    rule_name = fit(f"{group_name}-idle", NAMES.limit("alicloud:ess/scalingRule:ScalingRule", "scalingRuleName"))
    rule = alicloud.ess.ScalingRule(
        f"{name}-idle",
        scaling_group_id=scaling_group_id,
        scaling_rule_name=rule_name,
        scaling_rule_type="SimpleScalingRule",
        adjustment_type="TotalCapacity",
        adjustment_value=min_size,
        opts=opts,
    )
    alicloud.ess.Alarm(
        f"{name}-idle",
        name=rule_name,
        description=f"{group_name}: idle (GPU utilisation under {idle.gpu_util_below}% for {idle.for_minutes} "
        f"minutes): scale to {min_size}",
        scaling_group_id=scaling_group_id,
        alarm_actions=[rule.ari],
        metric_type="custom",
        # The application group id is a number in ESS's CreateAlarm (GroupId).
        cloud_monitor_group_id=group.id.apply(int),
        metric_name=GPU_UTILISATION_CUSTOM_METRIC,
        dimensions={"NodeGroup": group_name},
        statistics="Average",
        comparison_operator="<",
        threshold=f"{idle.gpu_util_below}",
        period=PERIOD_SECONDS,
        evaluation_count=idle.for_minutes,
        opts=opts,
    )
    return rule
