"""Per node group metric alerts on the GPU metrics (new and fatal XID errors, uncorrectable ECC, row-remap failures,
node-check failures, low utilisation), the action group they notify, and the idle rule of a scale set's autoscale
setting.

Metric source: gpufleet-gpu-health (bootstrap/scripts/gpu-health.sh) publishes the DCGM fields as custom metrics of
the node's own scale set (namespace METRICS_NAMESPACE, dimension Instance) through Azure Monitor's custom metrics
REST API with the node identity (Monitoring Metrics Publisher on that scale set). A node with a fatal XID,
uncorrectable ECC, a failed row remap or a failed node check reports itself unhealthy to the Application Health
extension and automatic repairs replace it; these alerts tell people.
"""

from __future__ import annotations

import pulumi
from pulumi_azure_native import monitor

from gpufleet.clouds.azure.names import NAMES
from gpufleet.clouds.naming import fit
from gpufleet.stackfile.models import Idle
from gpufleet.stackfile.monitoring import LowUtilisation

from ...bootstrap.operations import DCGM_DOWN_TEXT, DCGM_UP_METRIC, FATAL_XID_TEXT, GPU_UTILISATION_CUSTOM_METRIC
from .identity import METRICS_NAMESPACE

SHORT_NAME_MAX = NAMES.limit("azure-native:monitor:ActionGroup", "groupShortName")  # the SMS sender
SINGLE_RESOURCE = "Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria"
ERROR_SEVERITY, WARNING_SEVERITY = 1, 2
IDLE_COOLDOWN = "PT5M"


def action_group(
    name: str, resource_group_name: pulumi.Input[str], emails: list[str], tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> monitor.ActionGroup:
    """The stack's action group: one email receiver per address of monitoring.alarms.emails. No Owner role
    receiver: it mails only users assigned Owner directly at subscription scope, never through a group
    (learn.microsoft.com/azure/azure-monitor/alerts/alerts-troubleshoot), so it may reach nobody, and where it
    reaches someone it is every owner of the subscription, not the people who run this cluster. Action groups
    take no customer-managed key: Azure Monitor keeps them under Microsoft-managed keys."""
    return monitor.ActionGroup(
        f"{name}-alerts",
        resource_group_name=resource_group_name,
        location="Global",
        group_short_name=fit(f"gf-{name}", SHORT_NAME_MAX),
        enabled=True,
        email_receivers=[
            monitor.MicrosoftCommonEmailReceiverArgs(
                name=f"email-{i}", email_address=email, use_common_alert_schema=True
            )
            for i, email in enumerate(emails, start=1)
        ],
        tags=tags,
        opts=opts,
    )


def _alert(
    name: str, description: str, metric: str, aggregation: str, operator: str, threshold: float, minutes: int,
    severity: int, scale_set_id: pulumi.Input[str], resource_group_name: pulumi.Input[str],
    target: pulumi.Input[str], tags: dict[str, str], opts: pulumi.ResourceOptions,
) -> monitor.MetricAlert:
    return monitor.MetricAlert(
        name,
        resource_group_name=resource_group_name,
        location="global",
        description=description,
        severity=severity,
        enabled=True,
        scopes=[scale_set_id],
        # Evaluated every minute, or every 5 minutes over longer windows (frequency never above the window).
        evaluation_frequency="PT1M" if minutes == 1 else "PT5M",
        window_size=f"PT{minutes}M" if minutes < 60 else f"PT{minutes // 60}H",
        criteria=monitor.MetricAlertSingleResourceMultipleMetricCriteriaArgs(
            odata_type=SINGLE_RESOURCE,
            all_of=[
                monitor.MetricCriteriaArgs(
                    criterion_type="StaticThresholdCriterion",
                    name=metric,
                    metric_name=metric,
                    metric_namespace=METRICS_NAMESPACE,
                    operator=operator,
                    threshold=threshold,
                    time_aggregation=aggregation,
                    # A custom metric exists only once a node has published it.
                    skip_metric_validation=True,
                )
            ],
        ),
        actions=[monitor.MetricAlertActionArgs(action_group_id=target)],
        auto_mitigate=True,
        tags=tags,
        opts=opts,
    )


def group_alerts(
    name: str, group_name: str, scale_set_id: pulumi.Input[str], low: LowUtilisation,
    resource_group_name: pulumi.Input[str], target: pulumi.Input[str], tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> list[monitor.MetricAlert]:
    """New and fatal XID, ECC, row-remap, node-check and low-utilisation alerts on one scale set's custom metrics.
    Each description says what its metric is."""
    common = (scale_set_id, resource_group_name, target, tags, opts)
    return [
        # gpu_xid_errors counts the XIDs the kernel logged in each minute (not the last one), summed over the nodes,
        # so the alert resolves once they stop.
        _alert(f"{name}-xid", f"{group_name}: GPUs logged new XID errors (most are application errors; the node "
               "stays)", "gpu_xid_errors", "Total", "GreaterThan", 0, 1, WARNING_SEVERITY, *common),
        _alert(f"{name}-fatal-xid", f"{group_name}: a GPU logged a fatal XID ({FATAL_XID_TEXT}); the node "
               "reports unhealthy and is repaired", "gpu_fatal_xid_errors", "Total", "GreaterThan", 0, 1,
               ERROR_SEVERITY, *common),
        _alert(f"{name}-ecc", f"{group_name}: uncorrectable (double-bit) ECC errors on a GPU; the node reports "
               "unhealthy and is repaired", "gpu_ecc_uncorrectable", "Maximum", "GreaterThan", 0, 1, ERROR_SEVERITY,
               *common),
        _alert(f"{name}-row-remap", f"{group_name}: row remapping failed on a GPU; the node reports unhealthy and is "
               "repaired", "gpu_row_remap_failures", "Maximum", "GreaterThan", 0, 1, ERROR_SEVERITY, *common),
        _alert(f"{name}-nodecheck", f"{group_name}: a node failed gpufleet-nodecheck", "nodecheck_failed", "Maximum",
               "GreaterThan", 0, 1, ERROR_SEVERITY, *common),
        _alert(f"{name}-dcgm-down", f"{group_name}: {DCGM_DOWN_TEXT}", DCGM_UP_METRIC, "Minimum", "LessThan", 1, 1,
               ERROR_SEVERITY, *common),
        _alert(f"{name}-low-util", f"{group_name}: GPU utilisation under {low.below_percent}% for {low.for_minutes} "
               "minutes", GPU_UTILISATION_CUSTOM_METRIC, "Average", "LessThan", low.below_percent, low.for_minutes,
               WARNING_SEVERITY, *common),
    ]


def idle_rule(scale_set_id: pulumi.Input[str], idle: Idle) -> monitor.ScaleRuleArgs:
    """Autoscale's own rule: the scale set's average GPU utilisation under the threshold for the window removes
    every VM above the profile minimum (a 100 % decrease, bounded by the minimum; a scale action count must be at
    least 1, so ExactCount cannot name a minimum of 0)."""
    return monitor.ScaleRuleArgs(
        metric_trigger=monitor.MetricTriggerArgs(
            metric_name=GPU_UTILISATION_CUSTOM_METRIC,
            metric_namespace=METRICS_NAMESPACE,
            metric_resource_uri=scale_set_id,
            time_grain="PT1M",
            statistic="Average",
            time_window=f"PT{idle.for_minutes}M",
            time_aggregation="Average",
            operator="LessThan",
            threshold=idle.gpu_util_below,
        ),
        scale_action=monitor.ScaleActionArgs(
            direction="Decrease", type="PercentChangeCount", value="100", cooldown=IDLE_COOLDOWN
        ),
    )
