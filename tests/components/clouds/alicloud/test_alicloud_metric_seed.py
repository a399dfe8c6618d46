"""A node group's custom metrics are reported before the rules and the idle alarm task that read them: the seed's
dynamic provider through the official CloudMonitor SDK client against recorded answers (alicloud_replay), and the
plan's order (the rules and the ESS alarm wait for the seed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import responses
from alicloud_replay import Replay, static_key
from conftest import of_type, one, shipped_plan

from components.clouds.alicloud.cloudmonitor_calls import CloudMonitorRefused
from components.clouds.alicloud.metric_seed import SEED_TYPE, MetricSeedProvider, SeedTimeout
from gpufleet.clouds.alicloud.mock_answers import new_resource
from gpufleet.plan.planner import PlanResult

REGION = "cn-wulanchabu"
GROUP = "gpufleet-train-dev-h20"
PROPS: dict[str, Any] = {
    "group_id": "84707926", "dimension": json.dumps({"NodeGroup": GROUP}),
    "metrics": {"gpu_xid_errors": 0, "gpu_utilization": 100}, "region": REGION,
    "timeout_seconds": 90, "poll_seconds": 30, "__provider": "serialized provider (never sent)",
}


class FakeTime:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def provider(time: FakeTime) -> MetricSeedProvider:
    return MetricSeedProvider(credential=static_key(), sleep=time.sleep, clock=time.clock)


@pytest.fixture
def replay():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield Replay(mock)


def test_the_seed_reports_each_metric_as_the_nodes_do_then_waits_until_each_is_found(replay: Replay) -> None:
    replay.answer("PutCustomMetric", "PutCustomMetric.ok")
    replay.answer("DescribeCustomMetricList", "DescribeCustomMetricList.none", "DescribeCustomMetricList.found")
    time = FakeTime()
    result = provider(time).create(dict(PROPS))
    (put,) = [params for action, params in replay.calls if action == "PutCustomMetric"]
    # One raw point per metric on the group's NodeGroup series, as gpu-health-alicloud.sh's publish() sends them.
    assert put == {
        "MetricList.1.GroupId": "84707926", "MetricList.1.MetricName": "gpu_utilization", "MetricList.1.Type": "0",
        "MetricList.1.Dimensions": json.dumps({"NodeGroup": GROUP}, separators=(",", ":")),
        "MetricList.1.Values": '{"value": 100}',
        "MetricList.2.GroupId": "84707926", "MetricList.2.MetricName": "gpu_xid_errors", "MetricList.2.Type": "0",
        "MetricList.2.Dimensions": json.dumps({"NodeGroup": GROUP}, separators=(",", ":")),
        "MetricList.2.Values": '{"value": 0}',
    }
    assert replay.calls[0][0] == "PutCustomMetric"  # reported before anything is looked up
    lookups = [params for action, params in replay.calls if action == "DescribeCustomMetricList"]
    assert lookups[0] == {"GroupId": "84707926", "MetricName": "gpu_utilization", "Dimension": f"NodeGroup={GROUP}"}
    assert len(lookups) == 3 and time.slept == [30.0]  # not found once, then both found
    assert result.id == f"84707926/{PROPS['dimension']}" and result.outs == PROPS


def test_a_metric_never_found_stops_the_deploy_after_the_bounded_wait(replay: Replay) -> None:
    replay.answer("PutCustomMetric", "PutCustomMetric.ok")
    replay.answer("DescribeCustomMetricList", "DescribeCustomMetricList.none")
    time = FakeTime()
    with pytest.raises(SeedTimeout, match=r"did not find them within 90 s; the alarm rules need them reported"):
        provider(time).create(dict(PROPS))
    assert time.now == 90


def test_a_refused_report_stops_the_deploy_with_its_code(replay: Replay) -> None:
    replay.answer("PutCustomMetric", "PutCustomMetric.refused")
    with pytest.raises(CloudMonitorRefused, match=r"PutCustomMetric refused: 206 \(Group id 84707926 not found.\)"):
        provider(FakeTime()).create(dict(PROPS))
    assert replay.count("DescribeCustomMetricList") == 0


def test_a_new_series_is_a_new_seed_and_the_offline_answer_is_creates(replay: Replay) -> None:
    seeds = MetricSeedProvider()
    assert seeds.diff("id", PROPS, {**PROPS, "timeout_seconds": 60}).changes is False
    assert seeds.diff("id", PROPS, {**PROPS, "group_id": "1"}).replaces == ["group_id"]
    physical, outputs = new_resource(SEED_TYPE, "train-h20-metric-seed", dict(PROPS), REGION)
    assert physical == f"84707926/{PROPS['dimension']}" and outputs == {}


def infer() -> PlanResult:
    """The inference stack: GPU metrics, alarms and an idle task."""
    return shipped_plan("alicloud-infer-gn7i")


def test_every_rule_and_the_idle_alarm_wait_for_the_seed_of_what_they_read() -> None:
    plan = infer()
    seed = one(plan, SEED_TYPE)
    rules = of_type(plan, "pulumi-python:dynamic/alicloud:CustomMetricRule")
    alarm = one(plan, "alicloud:ess/alarm:Alarm")
    assert rules and all(seed.urn in r.depends_on for r in rules) and seed.urn in alarm.depends_on
    read = {r.inputs["metric_name"] for r in rules} | {alarm.inputs["metricName"]}
    assert set(seed.inputs["metrics"]) == read
    # Values that alarm on nothing: errors 0 (rules alarm over 0), utilisation 100 (low-util and idle act below),
    # dcgm_up 1 (its rule acts below 1).
    quiet = {"gpu_utilization", "dcgm_up"}
    assert {m: v for m, v in seed.inputs["metrics"].items() if m not in quiet} == dict.fromkeys(read - quiet, 0)
    assert seed.inputs["metrics"]["dcgm_up"] == 1
    assert seed.inputs["metrics"]["gpu_utilization"] == 100
    assert all(r.inputs["threshold"] == "0" or r.inputs["comparison_operator"] == "<" for r in rules)
    # The series the rules and the alarm read, in the application group they read.
    (group,) = of_type(plan, "alicloud:cms/monitorGroup:MonitorGroup")
    assert seed.property_dependencies["group_id"] == (group.urn,)
    assert json.loads(seed.inputs["dimension"]) == alarm.inputs["dimensions"]
    assert all(f'"dimension": "NodeGroup={alarm.inputs["dimensions"]["NodeGroup"]}"' in r.inputs["resources"]
               for r in rules)
