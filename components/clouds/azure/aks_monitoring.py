"""GPU metrics and alerts of an AKS cluster, following the data at run time: the DCGM exporter (the in-cluster layer)
serves Prometheus metrics on every GPU node; Azure Monitor's managed Prometheus scrapes them (the cluster's metrics
add-on, azureMonitorProfile.metrics, with the scrape job of components/kubernetes/azure_prometheus.py) and sends them
through a data collection endpoint and rule to an Azure Monitor workspace; one Prometheus rule group per pool
evaluates the alerts there and notifies the stack's action group (create_alarm_target).

The resources and their inputs are Microsoft's own onboarding template, Azure/prometheus-collector
AddonBicepTemplate/FullAzureMonitorMetricsProfile.bicep@4729fae (a Linux data collection endpoint; a Linux data
collection rule from the prometheusForwarder source `PrometheusDataSource`, stream Microsoft-PrometheusMetrics, to
the workspace as monitoring account `MonitoringAccount1`; the rule associated with the cluster as `MSProm-<location>-
<cluster>`: nested_azuremonitormetrics_dcra_clusterResourceId.bicep@9be9458), and its alert rule groups
(AddonBicepTemplate/recommendedMetricAlerts.bicep@05f8b12: rules with `for`, severity, resolveConfiguration and the
action group's id). Input names are azure-native's (monitor.AzureMonitorWorkspace, DataCollectionEndpoint,
DataCollectionRule, DataCollectionRuleAssociation; alertsmanagement.PrometheusRuleGroup, whose `scopes` the SDK
describes as limited to one workspace).

The DCGM fields are the exporter's default counters (NVIDIA/dcgm-exporter etc/default-counters.csv@00d6d34):
DCGM_FI_DEV_GPU_UTIL (gauge, %), DCGM_FI_DEV_XID_ERRORS (gauge: the last XID the GPU reported, so an alert fires on a
change, not on the sticky value) and DCGM_FI_DEV_ROW_REMAP_FAILURE (gauge, 1 once row remapping failed). A node's
readiness is kube-state-metrics' kube_node_status_condition, which the add-on scrapes by default. A pool's series are
told apart by node name: AKS names a pool's nodes aks-<pool>-<number>-vmss<instance>.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import alertsmanagement, containerservice, monitor

from components.bootstrap.operations import FATAL_XID_TEXT
from gpufleet.stackfile.monitoring import LowUtilisation

STREAM = "Microsoft-PrometheusMetrics"
SOURCE = "PrometheusDataSource"
DESTINATION = "MonitoringAccount1"
# Azure Monitor alert severities: 0 critical, 1 error, 2 warning, 3 informational, 4 verbose.
ERROR, WARNING, INFORMATIONAL = 1, 2, 3
EVALUATION = "PT1M"
RESOLVE_AFTER = "PT10M"
NOT_READY_FOR = "PT5M"
XID_WINDOW = "5m"


def metrics_profile() -> containerservice.ManagedClusterAzureMonitorProfileArgs:
    """The cluster's managed Prometheus add-on (ama-metrics), as `az aks create --enable-azure-monitor-metrics` sets it
    (MicrosoftDocs/azure-docs articles/azure-monitor/containers/prometheus-metrics-enable.md: "azureMonitorProfile":
    {"metrics": {"enabled": true}})."""
    return containerservice.ManagedClusterAzureMonitorProfileArgs(
        metrics=containerservice.ManagedClusterAzureMonitorProfileMetricsArgs(enabled=True))


@dataclass(frozen=True)
class PrometheusArgs:
    """Where the workspace and rules go, and the cluster whose metrics they hold."""

    resource_group_name: pulumi.Input[str]
    location: str
    cluster_id: pulumi.Input[str]
    cluster_name: pulumi.Input[str]
    tags: dict[str, str]


def managed_prometheus(name: str, args: PrometheusArgs, opts: pulumi.ResourceOptions) -> monitor.AzureMonitorWorkspace:
    """The workspace, and the endpoint, rule and association that carry the cluster's metrics into it."""
    common = {"resource_group_name": args.resource_group_name, "location": args.location, "tags": args.tags}
    workspace = monitor.AzureMonitorWorkspace(f"{name}-prometheus", **common, opts=opts)
    endpoint = monitor.DataCollectionEndpoint(f"{name}-prometheus", kind="Linux", **common, opts=opts)
    rule = monitor.DataCollectionRule(
        f"{name}-prometheus",
        kind="Linux",
        description="the AKS cluster's Prometheus metrics (managed Prometheus) to its Azure Monitor workspace",
        data_collection_endpoint_id=endpoint.id,
        data_sources=monitor.DataCollectionRuleDataSourcesArgs(prometheus_forwarder=[
            monitor.PrometheusForwarderDataSourceArgs(name=SOURCE, streams=[STREAM], label_include_filter={})]),
        destinations=monitor.DataCollectionRuleDestinationsArgs(monitoring_accounts=[
            monitor.MonitoringAccountDestinationArgs(account_resource_id=workspace.id, name=DESTINATION)]),
        data_flows=[monitor.DataFlowArgs(destinations=[DESTINATION], streams=[STREAM])],
        **common,
        opts=opts,
    )
    monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus",
        resource_uri=args.cluster_id,
        association_name=pulumi.Output.concat("MSProm-", args.location, "-", args.cluster_name),
        data_collection_rule_id=rule.id,
        description="the cluster's Prometheus metrics to its workspace; deleting it stops their collection",
        opts=opts,
    )
    return workspace


def pool_rules(group: str, pool: str, low: LowUtilisation, target: pulumi.Input[str]
               ) -> list[alertsmanagement.PrometheusRuleArgs]:
    """GPU idle (information), a new XID, a failed row remap and a node not ready, on one pool's nodes."""
    nodes = f'node=~"aks-{pool}-.+"'
    return [
        _rule(f"{group}: GPUs idle", f"{group}: GPU utilisation under {low.below_percent}% for {low.for_minutes} "
              "minutes on {{ $labels.node }} (information: the autoscaler removes nodes no pod needs)",
              f"avg by (node) (DCGM_FI_DEV_GPU_UTIL{{{nodes}}}) < {low.below_percent}", f"PT{low.for_minutes}M",
              INFORMATIONAL, target),
        _rule(f"{group}: GPU XID error", f"{group}: GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} reported XID "
              "{{ $value }} (most are application errors; "
              f"{FATAL_XID_TEXT} mean the node needs replacing)",
              f"max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS{{{nodes}}}) > 0 and max by (node, gpu) "
              f"(changes(DCGM_FI_DEV_XID_ERRORS{{{nodes}}}[{XID_WINDOW}])) > 0", None, WARNING, target),
        _rule(f"{group}: GPU row remap failed", f"{group}: row remapping failed on GPU {{{{ $labels.gpu }}}} of "
              "{{ $labels.node }}: drain and replace the node",
              f"max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE{{{nodes}}}) > 0", None, ERROR, target),
        _rule(f"{group}: node not ready", f"{group}: node {{{{ $labels.node }}}} is not Ready",
              f'max by (node) (kube_node_status_condition{{condition="Ready", status="true", {nodes}}}) == 0',
              NOT_READY_FOR, ERROR, target),
    ]


def _rule(alert: str, description: str, expression: str, for_: str | None, severity: int,
          target: pulumi.Input[str]) -> alertsmanagement.PrometheusRuleArgs:
    return alertsmanagement.PrometheusRuleArgs(
        alert=alert,
        expression=expression,
        for_=for_,
        severity=severity,
        enabled=True,
        annotations={"description": description},
        resolve_configuration=alertsmanagement.PrometheusRuleResolveConfigurationArgs(
            auto_resolved=True, time_to_resolve=RESOLVE_AFTER),
        actions=[alertsmanagement.PrometheusRuleGroupActionArgs(action_group_id=target)],
    )


def pool_alerts(name: str, group: str, pool: str, workspace_id: pulumi.Input[str], args: PrometheusArgs,
                low: LowUtilisation, target: pulumi.Input[str], opts: pulumi.ResourceOptions
                ) -> alertsmanagement.PrometheusRuleGroup:
    """One pool's rule group, evaluated every minute over the cluster's series in the workspace."""
    return alertsmanagement.PrometheusRuleGroup(
        f"{name}-{group}-gpu-alerts",
        resource_group_name=args.resource_group_name,
        location=args.location,
        description=f"{group}: GPU and node alerts of AKS pool {pool}",
        scopes=[workspace_id],
        cluster_name=args.cluster_name,
        enabled=True,
        interval=EVALUATION,
        rules=pool_rules(group, pool, low, target),
        tags=args.tags,
        opts=opts,
    )
