"""The GPU metrics and alerts of an AKS stack, following the data: the cluster's managed Prometheus add-on, the scrape
job that takes the DCGM exporter's pods, the data collection endpoint and rule into the Azure Monitor workspace and
their association with the cluster, and per pool a Prometheus rule group over that workspace notifying the stack's
action group. Spot eviction drains through AKS's own node auto-drain: no termination handler is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libyaml_files
import pytest
import yaml
from azure_plans import one, plan_variant, variant
from conftest import without_job_operators
from kubernetes_schemas import validate

from components.kubernetes.azure_prometheus import scrape_config
from components.kubernetes.dcgm import dcgm_objects
from components.kubernetes.pins import component_pins
from gpufleet.plan.planner import PlanResult

STACK = "azure-infer-aks"  # two pools: a Regular base and Spot
LOW = {"below_percent": 10, "for_minutes": 60}
ALARMS = {"target": "create", "emails": ["oncall@example.com"], "low_utilisation": LOW}
CLUSTER = "azure-native:containerservice:ManagedCluster"
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
ENDPOINT = "azure-native:monitor:DataCollectionEndpoint"
RULE = "azure-native:monitor:DataCollectionRule"
ASSOCIATION = "azure-native:monitor:DataCollectionRuleAssociation"
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
ACTION_GROUP = "azure-native:monitor:ActionGroup"
POOL = "azure-native:containerservice:AgentPool"


def of_type(plan: PlanResult, typ: str) -> list[Any]:
    return [r for r in plan.resources if r.type == typ]


def monitored(**monitoring: Any) -> dict[str, Any]:
    """The shipped stack with these monitoring settings, less the job operators (nothing here reads them)."""
    return without_job_operators(variant(STACK, monitoring=monitoring))


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    """The shipped two-pool AKS stack with alarms."""
    return plan_variant(tmp_path_factory.mktemp("alarms"), monitored(alarms=ALARMS))


def test_the_cluster_runs_the_managed_prometheus_add_on(plan: PlanResult) -> None:
    assert one(plan, CLUSTER).inputs["azureMonitorProfile"] == {"metrics": {"enabled": True}}


def test_the_metrics_flow_from_the_cluster_through_the_rule_into_the_workspace(plan: PlanResult) -> None:
    cluster, workspace, endpoint = one(plan, CLUSTER), one(plan, WORKSPACE), one(plan, ENDPOINT)
    rule, association = one(plan, RULE), one(plan, ASSOCIATION)
    assert endpoint.inputs["kind"] == "Linux" and rule.inputs["kind"] == "Linux"
    assert rule.property_dependencies["dataCollectionEndpointId"] == (endpoint.urn,)
    assert rule.inputs["dataSources"] == {"prometheusForwarder": [
        {"name": "PrometheusDataSource", "streams": ["Microsoft-PrometheusMetrics"], "labelIncludeFilter": {}}]}
    (account,) = rule.inputs["destinations"]["monitoringAccounts"]
    assert account["name"] == "MonitoringAccount1"
    assert rule.property_dependencies["destinations"] == (workspace.urn,)
    assert rule.inputs["dataFlows"] == [
        {"destinations": ["MonitoringAccount1"], "streams": ["Microsoft-PrometheusMetrics"]}]
    assert association.property_dependencies["resourceUri"] == (cluster.urn,)
    assert association.property_dependencies["dataCollectionRuleId"] == (rule.urn,)
    assert association.inputs["associationName"] == f"MSProm-eastus-{cluster.inputs['resourceName']}"


def test_each_pool_has_a_rule_group_over_the_workspace_notifying_the_action_group(plan: PlanResult) -> None:
    workspace, cluster, target = one(plan, WORKSPACE), one(plan, CLUSTER), one(plan, ACTION_GROUP)
    groups = {r.name: r for r in of_type(plan, RULE_GROUP)}
    pools = {p.inputs["agentPoolName"] for p in of_type(plan, POOL)}
    assert set(groups) == {"infer-aks-a100-base-gpu-alerts", "infer-aks-a100-spot-gpu-alerts"} and len(pools) == 2
    for group in groups.values():
        assert group.property_dependencies["scopes"] == (workspace.urn,)
        assert group.property_dependencies["clusterName"] == (cluster.urn,)
        assert group.inputs["interval"] == "PT1M" and group.inputs["enabled"] is True
        assert group.property_dependencies["rules"] == (target.urn,)
        (pool,) = [p for p in pools if f'node=~"aks-{p}-.+"' in group.inputs["rules"][0]["expression"]]
        for rule in group.inputs["rules"]:
            assert f'node=~"aks-{pool}-.+"' in rule["expression"], rule["alert"]
            assert rule["resolveConfiguration"] == {"autoResolved": True, "timeToResolve": "PT10M"}


def test_the_rules_read_the_dcgm_fields_and_node_readiness_at_their_severities(plan: PlanResult) -> None:
    group = next(r for r in of_type(plan, RULE_GROUP) if r.name == "infer-aks-a100-base-gpu-alerts")
    rules = {rule["alert"].split(": ", 1)[1]: rule for rule in group.inputs["rules"]}
    assert set(rules) == {"GPUs idle", "GPU XID error", "GPU row remap failed", "node not ready"}
    idle = rules["GPUs idle"]
    assert idle["expression"].startswith("avg by (node) (DCGM_FI_DEV_GPU_UTIL{")
    assert idle["expression"].endswith(f"< {LOW['below_percent']}") and idle["for"] == f"PT{LOW['for_minutes']}M"
    assert idle["severity"] == 3  # informational
    xid = rules["GPU XID error"]["expression"]
    assert "DCGM_FI_DEV_XID_ERRORS" in xid and "changes(DCGM_FI_DEV_XID_ERRORS" in xid  # a new XID, not the sticky one
    assert rules["GPU XID error"]["severity"] == 2
    assert "DCGM_FI_DEV_ROW_REMAP_FAILURE" in rules["GPU row remap failed"]["expression"]
    assert rules["GPU row remap failed"]["severity"] == 1
    ready = rules["node not ready"]
    assert 'kube_node_status_condition{condition="Ready", status="true"' in ready["expression"]
    assert ready["expression"].endswith("== 0") and ready["for"] == "PT5M" and ready["severity"] == 1


def test_the_scrape_job_finds_the_dcgm_exporter_pods_and_validates(plan: PlanResult) -> None:
    (config_map,) = [r for r in of_type(plan, "kubernetes:core/v1:ConfigMap")
                     if r.inputs["metadata"]["name"] == "ama-metrics-prometheus-config"]
    assert config_map.inputs["metadata"]["namespace"] == "kube-system"
    validate(scrape_config(), "1.36")
    text = config_map.inputs["data"]["prometheus-config"]
    (job,) = libyaml_files.load(text)["scrape_configs"]
    # libyaml's emitter writes what PyYAML's pure one wrote for the same document, byte for byte.
    assert text == yaml.safe_dump(libyaml_files.load(text), sort_keys=False)
    # The job keeps what the exporter's DaemonSet actually is: its namespace, its pod label and its port's name.
    daemonset = next(o for o in dcgm_objects((), component_pins()) if o["kind"] == "DaemonSet")
    template = daemonset["spec"]["template"]
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": [daemonset["metadata"][
        "namespace"]]}}]
    keep = {tuple(r["source_labels"]): r["regex"] for r in job["relabel_configs"] if r["action"] == "keep"}
    label = template["metadata"]["labels"]["app.kubernetes.io/name"]
    assert keep[("__meta_kubernetes_pod_label_app_kubernetes_io_name",)] == label
    assert keep[("__meta_kubernetes_pod_container_port_name",)] in {
        p["name"] for c in template["spec"]["containers"] for p in c["ports"]}
    assert {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node", "action": "replace"} in job[
        "relabel_configs"]


def test_without_alarms_the_metrics_flow_but_no_rule_group_is_made(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, monitored(gpu_metrics=True, alarms=None))
    assert one(plan, WORKSPACE) and not of_type(plan, RULE_GROUP)


def test_without_gpu_metrics_there_is_no_add_on_workspace_or_scrape_job(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, monitored(gpu_metrics=False, alarms=None))
    assert "azureMonitorProfile" not in one(plan, CLUSTER).inputs
    assert not of_type(plan, WORKSPACE) and not of_type(plan, RULE) and not of_type(plan, RULE_GROUP)
    assert not [r for r in of_type(plan, "kubernetes:core/v1:ConfigMap")
                if r.inputs["metadata"]["name"] == "ama-metrics-prometheus-config"]


def test_a_spot_pool_is_drained_by_aks_not_by_a_termination_handler(plan: PlanResult) -> None:
    spot = [p for p in of_type(plan, POOL) if p.inputs["scaleSetPriority"] == "Spot"]
    assert spot and spot[0].inputs["scaleSetEvictionPolicy"] == "Delete"
    assert not [r for r in plan.resources if "termination-handler" in r.name]


def test_the_monitoring_resources_register_only_inputs_the_sdk_declares(plan: PlanResult) -> None:
    from pulumi._types import _py_properties
    from pulumi_azure_native import monitor

    args = {WORKSPACE: monitor.AzureMonitorWorkspaceArgs, ENDPOINT: monitor.DataCollectionEndpointArgs,
            RULE: monitor.DataCollectionRuleArgs, ASSOCIATION: monitor.DataCollectionRuleAssociationArgs}
    for typ, cls in args.items():
        declared = {camel for _, camel, _ in _py_properties(cls)}
        assert set(one(plan, typ).inputs) <= declared, typ
