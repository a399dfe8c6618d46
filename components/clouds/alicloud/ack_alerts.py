"""GPU alerts per ACK node pool on Managed Service for Prometheus (ARMS), and who they reach.

ACK nodes run ACK's image, so gpufleet-gpu-health (the VM path's CloudMonitor metrics, alarms.py) does not run there.
The ack-arms-prometheus add-on (ack_addons.py) connects the cluster to ARMS Prometheus and runs ACK's GPU exporter,
"compatible with DCGM exporter metrics" (ACK "Introduction to metrics", GPU Monitoring 2.0, updated Mar 25, 2026):
DCGM_FI_DEV_GPU_UTIL (listed there), DCGM_FI_DEV_XID_ERRORS ("value of the last XID error encountered") and
DCGM_FI_DEV_ROW_REMAP_FAILURE (dcgm-exporter etc/default-counters.csv). Node readiness is kube-state-metrics'
kube_node_status_condition, which ARMS scrapes in an ACK cluster.

A rule selects its pool's nodes by name: each pool names its nodes `<group>-<ip>` (ack_pools.node_name_mode), and
kube-state-metrics' kube_node_info carries every node's name in its `node` label, joined to the GPU series on the
node's name (the exporter's NodeName label, as ACK's GPU series write it: ACS "GPU-HPN node-level monitoring
metrics"). Not by the gpufleet.io/group label: kube-state-metrics exports node labels in kube_node_labels only for
the keys its --metric-labels-allowlist names (none by default since v2.0.0, kubernetes/kube-state-metrics PR 1125),
and ARMS's collector is the add-on's, whose allowlist gpufleet does not set.

arms.PrometheusAlertRule (aliyun/terraform-provider-alicloud @81c43b6 resource_alicloud_arms_prometheus_alert_rule.go:
cluster_id, duration, expression, message and the name required, lines 39-94; CreatePrometheusAlertRule) on the
cluster's ARMS instance, whose cluster id is the ACK cluster's (arms.Prometheus cluster_type aliyun-cs takes the ACK
cluster id: resource_alicloud_arms_prometheus.go:28-32, :120); the add-on creates that instance, so no
arms.Prometheus here. notify_type DISPATCH_RULE sends each alert through this cluster's notification policy
(arms.DispatchRule, CreateDispatchRule: resource_alicloud_arms_dispatch_rule.go) to an ARMS alert contact group by
email: a created group holds one arms.AlertContact per monitoring.alarms.emails address; a brought target names an
ARMS alert contact group (looked up by name). The CloudMonitor contact group of the VM path cannot receive ARMS
alerts, so ACK creates none.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_alicloud as alicloud

from components.bootstrap.operations import FATAL_XID_TEXT, FATAL_XIDS
from gpufleet.stackfile.monitoring import LowUtilisation

from ..scope import ClusterScope
from .ack_pools import NODE_IP, node_name_prefix

# DCGM_FI_DEV_XID_ERRORS holds the last XID, so "an XID" is a change of it within this window, not its value (one
# XID would hold the alert for the node's life); a fatal one stays raised until the node is replaced.
XID_WINDOW = "5m"
NODE = "NodeName"
# The dispatch rule's grouping as the provider's example sets it (website/docs/r/arms_dispatch_rule.html.markdown):
# wait 5 s, then one mail per 15 s window, alerts grouped by name.
GROUP_WAIT_S, GROUP_INTERVAL_S = 5, 15
ALL_DAY = ("00:00", "23:59")
arms = alicloud.arms
MATCH = arms.DispatchRuleLabelMatchExpressionGridLabelMatchExpressionGroupLabelMatchExpressionArgs


def pool_nodes(group: str) -> str:
    """One series per node of the group's pool, value 1, labelled with the node's name."""
    # PromQL anchors =~ at both ends and a group name has no regex metacharacter, so the pattern matches this pool's
    # names only (another group's longer prefix is not followed by an IP).
    names = f"{node_name_prefix(group)}{NODE_IP}"
    return f'max by ({NODE}) (label_replace(kube_node_info{{node=~"{names}"}}, "{NODE}", "$1", "node", "(.*)"))'


def on_pool(expression: str, group: str) -> str:
    """The expression's series on the group's nodes only."""
    return f"({expression}) * on ({NODE}) group_left () {pool_nodes(group)}"


def pool_checks(group: str, low: LowUtilisation) -> dict[str, tuple[str, str, int, str]]:
    """check -> (PromQL on the pool's nodes, severity, minutes, message)."""
    xid = "DCGM_FI_DEV_XID_ERRORS"
    fatal = " or ".join(f"{xid} == {code}" for code in FATAL_XIDS)
    not_ready = f'label_replace(kube_node_status_condition{{condition="Ready",status="true"}} == 0, "{NODE}", "$1", ' \
                '"node", "(.*)")'
    return {
        "xid": (on_pool(f"({xid} > 0) and (changes({xid}[{XID_WINDOW}]) > 0)", group), "warning", 1,
                f"{group}: a GPU logged an XID error (most are application errors; the node stays)"),
        "fatal-xid": (on_pool(fatal, group), "critical", 1,
                      f"{group}: a GPU logged a fatal XID ({FATAL_XID_TEXT}); replace the node"),
        "row-remap": (on_pool("DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", group), "critical", 1,
                      f"{group}: row remapping failed on a GPU; replace the node"),
        "node-not-ready": (on_pool(not_ready, group), "critical", 5, f"{group}: a node is not Ready"),
        "gpu-idle": (on_pool(f"avg by ({NODE}) (DCGM_FI_DEV_GPU_UTIL) < {low.below_percent}", group), "info",
                     low.for_minutes,
                     f"{group}: GPU utilisation under {low.below_percent}% for {low.for_minutes} minutes"),
    }


def alarm_contact_group(scope: ClusterScope) -> pulumi.Input[str] | None:
    """The ARMS alert contact group ACK's alerts reach: created with an alert contact per email, or the brought
    group's id by its name; None without alarms."""
    alarms, mode = scope.spec.monitoring.alarms, scope.resolved.alarm_target_mode
    if alarms is None or mode is None:
        return None
    if mode == "bring":
        return alicloud.arms.get_alert_contact_groups_output(
            alert_contact_group_name=alarms.target, opts=pulumi.InvokeOutputOptions(parent=scope.parent),
        ).groups.apply(lambda rows: rows[0].alert_contact_group_id)
    contacts = [
        alicloud.arms.AlertContact(f"{scope.name}-arms-contact-{email}", alert_contact_name=email, email=email,
                                   opts=scope.child)
        for email in alarms.emails
    ]
    return alicloud.arms.AlertContactGroup(
        f"{scope.name}-arms-alarms", alert_contact_group_name=f"gpufleet-{scope.base}-alarms",
        contact_ids=[contact.id for contact in contacts], opts=scope.child).id


def alert_name(scope: ClusterScope, group: str, check: str) -> str:
    """In the cluster's environment (scope.base): ARMS matches the account's alerts to dispatch rules by name, so
    dev's rule must not match prod's alerts."""
    return f"gpufleet-{scope.base}-{group}-{check}"


def dispatch_rule(scope: ClusterScope, contact: pulumi.Input[str],
                  alert_names: list[str]) -> alicloud.arms.DispatchRule:
    """This cluster's alerts (by their exact names: a prefix of one cluster's names can begin another's, `train-dev`
    beside `train`) by email to the contact group, all day, recoveries included."""
    return alicloud.arms.DispatchRule(
        f"{scope.name}-arms-dispatch",
        dispatch_rule_name=f"gpufleet-{scope.base}",
        dispatch_type="CREATE_ALERT",
        is_recover=True,
        group_rules=[alicloud.arms.DispatchRuleGroupRuleArgs(
            group_wait_time=GROUP_WAIT_S, group_interval=GROUP_INTERVAL_S, grouping_fields=["alertname"])],
        label_match_expression_grids=[arms.DispatchRuleLabelMatchExpressionGridArgs(
            label_match_expression_groups=[arms.DispatchRuleLabelMatchExpressionGridLabelMatchExpressionGroupArgs(
                label_match_expressions=[MATCH(
                    key="_aliyun_arms_alert_name", operator="re", value=f"^({'|'.join(alert_names)})$")])])],
        notify_rules=[alicloud.arms.DispatchRuleNotifyRuleArgs(
            notify_objects=[alicloud.arms.DispatchRuleNotifyRuleNotifyObjectArgs(
                notify_object_id=contact, notify_type="ARMS_CONTACT_GROUP", name=f"gpufleet-{scope.base}-alarms")],
            notify_channels=["email"], notify_start_time=ALL_DAY[0], notify_end_time=ALL_DAY[1])],
        opts=scope.child,
    )


def pool_alerts(scope: ClusterScope, cluster_id: pulumi.Input[str], pools: Mapping[str, pulumi.Resource],
                contact: pulumi.Input[str] | None, after: list[pulumi.Resource]
                ) -> list[alicloud.arms.PrometheusAlertRule]:
    """Each pool's rules, through the cluster's dispatch rule, once the pools and the ARMS add-on exist; none
    without monitoring.alarms."""
    alarms = scope.spec.monitoring.alarms
    if alarms is None or contact is None:
        return []
    checks = {group: pool_checks(group, alarms.low_utilisation) for group in pools}
    policy = dispatch_rule(scope, contact, [alert_name(scope, group, check) for group, named in checks.items()
                                            for check in named])
    opts = pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=[*after, *pools.values()]))
    return [
        alicloud.arms.PrometheusAlertRule(
            f"{scope.name}-{group}-{check}",
            prometheus_alert_rule_name=alert_name(scope, group, check),
            cluster_id=cluster_id,
            expression=expression,
            duration=str(minutes),
            message=message,
            labels=[alicloud.arms.PrometheusAlertRuleLabelArgs(name="severity", value=severity)],
            notify_type="DISPATCH_RULE",
            dispatch_rule_id=policy.id,
            opts=opts,
        )
        for group in pools
        for check, (expression, severity, minutes, message) in checks[group].items()
    ]
