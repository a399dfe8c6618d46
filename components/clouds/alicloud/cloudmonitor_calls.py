"""CloudMonitor calls from the deployer's machine, through the official SDK (alibabacloud_cms20190101, the
`preflight` extra): one client per region, and one rule for an answer. CloudMonitor answers a refusal with HTTP 200
and Success false (or a Code other than 200) as well as with an error status: both stop the deploy with its code and
message. Used by the custom-metric rules (custom_metric_rule.py) and the metric seed (metric_seed.py)."""

from __future__ import annotations

from typing import Any

# The SDK client's method for each action.
METHODS = {"PutCustomMetricRule": "put_custom_metric_rule", "DeleteMetricRules": "delete_metric_rules",
           "PutCustomMetric": "put_custom_metric", "DescribeCustomMetricList": "describe_custom_metric_list"}


class CloudMonitorRefused(RuntimeError):
    """CloudMonitor refused a call."""


def cloudmonitor_client(signer: Any, region: str, endpoint: str | None) -> Any:
    """The CloudMonitor client of `region` (every call to `endpoint` where given: tests)."""
    from alibabacloud_cms20190101.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    return Client(Config(credential=signer, region_id=region, endpoint=endpoint))


def call(client: Any, action: str, request: Any) -> Any:
    """The answer's body of `action`; CloudMonitorRefused naming the action, code and message when refused."""
    from alibabacloud_tea_openapi.exceptions import AlibabaCloudException

    try:
        body = getattr(client, METHODS[action])(request).body
    except AlibabaCloudException as error:
        raise CloudMonitorRefused(f"CloudMonitor {action} refused: {error.code} ({error.message})") from None
    if body is None or getattr(body, "success", None) is False or str(body.code) != "200":
        code, message = (body.code, body.message) if body is not None else (None, "no answer body")
        raise CloudMonitorRefused(f"CloudMonitor {action} refused: {code} ({message})")
    return body
