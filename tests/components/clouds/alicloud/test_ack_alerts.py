"""ACK's GPU alerts as registered under the offline engine: the ack-arms-prometheus add-on where GPU metrics are on,
per pool ARMS Prometheus rules whose expressions select that pool's nodes by gpufleet.io/group, sent through the
cluster's dispatch rule to an ARMS alert contact group holding the stack's emails (or the brought group)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pulumi
import pytest
from cluster_scope_program import registered_by
from conftest import read_cluster

from components.bootstrap.operations import FATAL_XIDS
from components.clouds.alicloud.ack_addons import cluster_addons
from components.clouds.alicloud.ack_alerts import alarm_contact_group, pool_alerts
from components.clouds.scope import ClusterScope
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.resolve import resolve_cluster

RULE = "alicloud:arms/prometheusAlertRule:PrometheusAlertRule"
GROUP = "alicloud:arms/alertContactGroup:AlertContactGroup"
CONTACT = "alicloud:arms/alertContact:AlertContact"
DISPATCH = "alicloud:arms/dispatchRule:DispatchRule"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
CLUSTER_ID = "c0123456789abcdef0123456789abcdef"


def ack(environment: str = "dev", name: str = "infer-ack", **monitoring: Any) -> ResolvedCluster:
    cluster = {**copy.deepcopy(read_cluster("alicloud-infer-ack")), "environment": environment, "name": name}
    cluster["storage"]["kms_key"] = "key-abcdefgh12345678"
    cluster["monitoring"].update(monitoring)
    second = {**copy.deepcopy(cluster["node_groups"][0]), "name": "l20"}
    cluster["node_groups"].append(second)
    return resolve_cluster(cluster)


def registered(resolved: ResolvedCluster) -> list[Any]:
    def step(scope: ClusterScope) -> None:
        cluster_id = pulumi.Output.from_input(CLUSTER_ID)
        addons = cluster_addons(scope.name, resolved, cluster_id, None, scope.child)
        pools = {g.name: pulumi.ComponentResource("test:pool", g.name, opts=scope.child) for g in resolved.groups}
        pool_alerts(scope, cluster_id, pools, alarm_contact_group(scope), after=list(addons))

    return registered_by(resolved, step)


def of(resources: list[Any], typ: str) -> list[Any]:
    return [r for r in resources if r.type == typ]


@pytest.fixture(scope="module")
def created() -> list[Any]:
    return registered(ack(alarms={"target": "create", "emails": ["oncall@example.com", "gpu@example.com"],
                                  "low_utilisation": {"below_percent": 10, "for_minutes": 60}}))


def test_gpu_metrics_install_ack_arms_prometheus_unpinned(created: list[Any]) -> None:
    (arms,) = [a for a in of(created, ADDON) if a.inputs["name"] == "ack-arms-prometheus"]
    assert arms.inputs["clusterId"] == CLUSTER_ID and "version" not in arms.inputs


def test_each_pools_rules_select_that_pools_nodes(created: list[Any]) -> None:
    rules = of(created, RULE)
    assert len(rules) == 10  # five checks on each of two pools
    for pool in ("a10", "l20"):
        mine = [r for r in rules if r.inputs["prometheusAlertRuleName"].startswith(f"gpufleet-infer-ack-dev-{pool}-")]
        assert {r.inputs["prometheusAlertRuleName"].rsplit(f"{pool}-", 1)[1] for r in mine} == {
            "xid", "fatal-xid", "row-remap", "node-not-ready", "gpu-idle"}
        for rule in mine:
            # By the pool's node names (`<group>-<ip>`, the pool's node_name_mode): kube-state-metrics exports node
            # labels (kube_node_labels' label_*) only for allowlisted keys, none by default.
            assert f'kube_node_info{{node=~"{pool}-[0-9.]+"}}' in rule.inputs["expression"]
            assert "kube_node_labels" not in rule.inputs["expression"]
            assert rule.inputs["clusterId"] == CLUSTER_ID


def test_the_checks_read_the_gpu_exporters_metrics(created: list[Any]) -> None:
    by_name = {r.inputs["prometheusAlertRuleName"]: r.inputs for r in of(created, RULE)}
    fatal = by_name["gpufleet-infer-ack-dev-a10-fatal-xid"]["expression"]
    assert all(f"DCGM_FI_DEV_XID_ERRORS == {code}" in fatal for code in FATAL_XIDS)
    assert "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0" in by_name["gpufleet-infer-ack-dev-a10-row-remap"]["expression"]
    # The field is the last XID, sticky: an XID alert fires on a change of it, not on its value.
    assert "changes(DCGM_FI_DEV_XID_ERRORS[5m]) > 0" in by_name["gpufleet-infer-ack-dev-a10-xid"]["expression"]
    assert 'condition="Ready",status="true"} == 0' in by_name["gpufleet-infer-ack-dev-a10-node-not-ready"]["expression"]
    idle = by_name["gpufleet-infer-ack-dev-a10-gpu-idle"]
    assert "DCGM_FI_DEV_GPU_UTIL) < 10" in idle["expression"] and idle["duration"] == "60"
    assert idle["labels"] == [{"name": "severity", "value": "info"}]


def test_the_rules_go_through_the_dispatch_rule_to_the_stacks_emails(created: list[Any]) -> None:
    assert sorted(c.inputs["email"] for c in of(created, CONTACT)) == ["gpu@example.com", "oncall@example.com"]
    (group,) = of(created, GROUP)
    assert set(group.property_dependencies["contactIds"]) == {c.urn for c in of(created, CONTACT)}
    (dispatch,) = of(created, DISPATCH)
    (notify,) = dispatch.inputs["notifyRules"]
    assert notify["notifyChannels"] == ["email"] and notify["notifyObjects"][0]["notifyType"] == "ARMS_CONTACT_GROUP"
    assert group.urn in dispatch.property_dependencies["notifyRules"]
    (grid,) = dispatch.inputs["labelMatchExpressionGrids"]
    (match,) = grid["labelMatchExpressionGroups"][0]["labelMatchExpressions"]
    assert {key: match[key] for key in ("key", "operator")} == {"key": "_aliyun_arms_alert_name", "operator": "re"}
    for rule in of(created, RULE):
        assert rule.inputs["notifyType"] == "DISPATCH_RULE"
        assert list(rule.property_dependencies["dispatchRuleId"]) == [dispatch.urn]


def test_a_dispatch_rule_matches_its_own_stacks_alerts_and_no_other_stacks() -> None:
    """ARMS matches every alert of the account against every dispatch rule by the alert's name: dev's rule took
    prod's alerts (and cluster `infer`'s took `infer-ack`'s) while it matched a prefix of the cluster's name."""
    emails = {"alarms": {"target": "create", "emails": ["oncall@example.com"]}}
    stacks = {key: registered(ack(*key, **emails))
              for key in (("dev", "infer-ack"), ("prod", "infer-ack"), ("prod", "infer-ack-dev"), ("dev", "infer"))}
    alerts = {key: {r.inputs["prometheusAlertRuleName"] for r in of(created, RULE)} for key, created in stacks.items()}
    everyone = set().union(*alerts.values())
    for key, created in stacks.items():
        (dispatch,) = of(created, DISPATCH)
        (match,) = dispatch.inputs["labelMatchExpressionGrids"][0]["labelMatchExpressionGroups"][0][
            "labelMatchExpressions"]
        assert {name for name in everyone if re.fullmatch(match["value"], name)} == alerts[key], key
    names = [{r.inputs[path] for r in of(created, typ)} for created in stacks.values()
             for typ, path in ((GROUP, "alertContactGroupName"), (DISPATCH, "dispatchRuleName"))]
    assert len(set().union(*names)) == len(names), "two stacks share an ARMS contact group or dispatch rule name"


def test_a_brought_target_is_the_arms_group_of_that_name() -> None:
    resources = registered(ack(alarms={"target": "oncall"}))
    assert of(resources, GROUP) == [] and of(resources, CONTACT) == []
    (dispatch,) = of(resources, DISPATCH)
    assert dispatch.inputs["notifyRules"][0]["notifyObjects"][0]["notifyObjectId"]


def test_no_alarms_no_rules_but_the_add_on() -> None:
    resources = registered(ack(alarms=None))
    assert of(resources, RULE) == [] and of(resources, DISPATCH) == []
    assert [a.inputs["name"] for a in of(resources, ADDON)][-1] == "ack-arms-prometheus"
