"""A node group's custom metrics, seeded before the alarm rules and the idle alarm task that read them.

CloudMonitor's PutCustomMetricRule: "Before calling this operation, call the PutCustomMetric operation to report
custom monitoring data" (alibabacloud.com/help/en/cms/cloudmonitor-1-0/developer-reference/api-putcustommetricrule),
and an ESS alarm task on a custom metric reads the application group's reported metrics likewise; a group that
starts at 0 nodes has reported nothing. So the deploy reports one raw data point of every metric the group's rules
read, on the group's NodeGroup dimension, as its nodes do (PutCustomMetric, Type 0, Values {"value": v}:
bootstrap/scripts/gpu-health-alicloud.sh), with the deployer's credentials, then waits until
DescribeCustomMetricList ("the reported custom metrics that are found in the query", GroupId, MetricName and Dimension
as key=value) finds each. The values alarm on nothing: 0 for every error count (the rules alarm above 0) and 100 % GPU
utilisation (the low-utilisation rule and the idle task act below their threshold, which the spec keeps under 100).

Chain: the application group -> MetricSeed -> the group's CustomMetricRules and its ESS alarm task. The shape is the
Azure path's (components/clouds/azure/metric_seed.py); the bounded wait is the shared one (clouds/seed_wait.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, Resource, ResourceProvider

from ..seed_wait import await_listed
from .cloudmonitor_calls import call, cloudmonitor_client
from .deployer_credentials import credential, provider_settings, service_endpoint

SEED_TYPE = "pulumi-python:dynamic/alicloud:MetricSeed"
RAW_DATA = "0"  # PutCustomMetric Type: 0 raw values, which CloudMonitor aggregates per period
# How long the seeded metrics may take to be found. Alibaba documents no bound; 15 minutes polled each 30 s, as the
# Azure seed waits (unconfirmed: measure on a first deploy).
SEED_TIMEOUT_SECONDS = 900
SEED_POLL_SECONDS = 30
REPLACED_BY = ("group_id", "dimension", "metrics", "region")


class SeedTimeout(RuntimeError):
    """A seeded metric was not found within the bounded wait."""


def seed_id(props: dict[str, Any]) -> str:
    """The seed's id: the application group and the series it reported (what create returns; the mocks answer it)."""
    return f"{props['group_id']}/{props['dimension']}"


class MetricSeedProvider(ResourceProvider):
    """PutCustomMetric once, then DescribeCustomMetricList until every metric is found. `credential`, `endpoint`,
    `sleep` and `clock` are for tests; a deploy signs with the alicloud provider's credentials at its CloudMonitor
    endpoint (its endpoints block's, else the region's)."""

    def __init__(self, credential: Any = None, endpoint: str | None = None,
                 sleep: Callable[[float], None] | None = None, clock: Callable[[], float] | None = None) -> None:
        super().__init__()
        self.credential, self.endpoint, self.sleep, self.clock = credential, endpoint, sleep, clock
        self.settings: dict[str, Any] = {}

    def configure(self, req: ConfigureRequest) -> None:
        self.settings = provider_settings(req.config, dict(os.environ))

    def _client(self, region: str) -> Any:
        signer = self.credential if self.credential is not None else credential(self.settings)
        return cloudmonitor_client(signer, region, self.endpoint or service_endpoint(self.settings, "cms"))

    def _publish(self, client: Any, props: dict[str, Any]) -> None:
        from alibabacloud_cms20190101.models import PutCustomMetricRequest, PutCustomMetricRequestMetricList

        dimensions = json.dumps(_dimension(props), separators=(",", ":"))
        points = [PutCustomMetricRequestMetricList(group_id=props["group_id"], metric_name=metric, type=RAW_DATA,
                                                   dimensions=dimensions, values=json.dumps({"value": value}))
                  for metric, value in sorted(props["metrics"].items())]
        call(client, "PutCustomMetric", PutCustomMetricRequest(metric_list=points))

    def _found(self, client: Any, props: dict[str, Any]) -> bool:
        from alibabacloud_cms20190101.models import DescribeCustomMetricListRequest

        dimension = "&".join(f"{key}={value}" for key, value in _dimension(props).items())
        for metric in sorted(props["metrics"]):
            request = DescribeCustomMetricListRequest(group_id=props["group_id"], metric_name=metric,
                                                      dimension=dimension)
            result = call(client, "DescribeCustomMetricList", request).result
            if not result or result.strip() in ("[]", "{}"):
                return False
        return True

    def create(self, props: dict[str, Any]) -> CreateResult:
        client = self._client(props["region"])
        self._publish(client, props)

        def timed_out() -> Exception:
            return SeedTimeout(
                f"the metrics {sorted(props['metrics'])} were reported to application group {props['group_id']} "
                f"({props['dimension']}) but DescribeCustomMetricList did not find them within "
                f"{props['timeout_seconds']} s; the alarm rules need them reported. Run `pulumi up` again")

        await_listed(lambda: self._found(client, props), float(props["timeout_seconds"]),
                     float(props["poll_seconds"]), timed_out, self.sleep, self.clock)
        return CreateResult(id_=seed_id(props), outs=dict(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Another group, series or metric list needs a new seed; the bounds of the wait change nothing seeded.
        keys = [key for key in REPLACED_BY if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(keys), replaces=keys, delete_before_replace=False)

    # delete: nothing to undo (reported data cannot be deleted; it expires), so the default no-op stays.


def _dimension(props: dict[str, Any]) -> dict[str, str]:
    return json.loads(props["dimension"])


class MetricSeed(Resource, module="alicloud", name="MetricSeed"):
    """One reported data point of each of a node group's custom metrics (see the module's docstring)."""

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(MetricSeedProvider(), name, props, opts)


def seed_metrics(name: str, group_id: pulumi.Input[str], group_name: str, metrics: dict[str, float], region: str,
                 opts: pulumi.ResourceOptions) -> MetricSeed:
    """The seed of `metrics` (name -> the value that alarms on nothing) on the node group's series."""
    return MetricSeed(f"{name}-metric-seed", {
        "group_id": group_id, "dimension": json.dumps({"NodeGroup": group_name}), "metrics": metrics,
        "region": region, "timeout_seconds": SEED_TIMEOUT_SECONDS, "poll_seconds": SEED_POLL_SECONDS,
    }, opts)
