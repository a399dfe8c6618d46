"""CloudMonitor alert rules on custom metrics, made with PutCustomMetricRule from the deployer's machine.

The nodes publish with PutCustomMetric into the cluster's application group, and CloudMonitor documents one rule API
for that data: PutCustomMetricRule "Creates an alert rule for custom monitoring. Before calling this operation, call
the PutCustomMetric operation to report custom monitoring data" (alibabacloud.com/help/en/cms/cloudmonitor-1-0/
developer-reference/api-putcustommetricrule), its Resources "the application group ID to which the custom
monitoring data belongs and the dimension to which the metric belongs", `[{"groupId":7378****,"dimension":
"instanceId=i-..."}]`. PutGroupMetricRule takes a cloud service's Namespace ("The namespace of the cloud service
... see DescribeMetricMetaList or Appendix 1: Metrics", alibabacloud.com/help/en/doc-detail/114943.htm) and names no
custom monitoring data. No provider resource calls PutCustomMetricRule (terraform-provider-alicloud 81c43b672:
cms.GroupMetricRule calls PutGroupMetricRule, alicloud/resource_alicloud_cms_group_metric_rule.go:218; cms.Alarm
and cloudmonitorservice.MetricAlarmRule PutResourceMetricRule, resource_alicloud_cms_alarm.go:606,
resource_alicloud_cloud_monitor_service_metric_alarm_rule.go:362), so this dynamic resource calls it through the
official SDK (alibabacloud_cms20190101, the `preflight` extra).

Create and update are PutCustomMetricRule with the rule's id ("If the alert rule ID already exists, the alert rule
is modified"); delete is DeleteMetricRules ("deletes one or more alert rules", Id.N); a refusal stops the deploy
(cloudmonitor_calls.py). The rules wait for their group's metric seed (metric_seed.py): the API wants the metric
reported first.

Credentials are the stack's alicloud provider's (deployer_credentials.py).
"""

from __future__ import annotations

import os
from typing import Any

import pulumi
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from .cloudmonitor_calls import call, cloudmonitor_client
from .deployer_credentials import credential, provider_settings, service_endpoint

# `pulumi-python:dynamic/alicloud:CustomMetricRule`: the offline engine answers it through the Alibaba backend.
RULE_TYPE = "pulumi-python:dynamic/alicloud:CustomMetricRule"
# PutCustomMetricRule's parameters, as the SDK's PutCustomMetricRuleRequest names them.
FIELDS = ("rule_id", "rule_name", "group_id", "metric_name", "resources", "contact_groups", "level", "statistics",
          "comparison_operator", "threshold", "evaluation_count", "period", "email_subject")
# A rule is its id in the account (and the region's endpoint): a new one of either is a new rule.
REPLACED_BY = ("rule_id", "region")


class CustomMetricRuleProvider(ResourceProvider):
    """PutCustomMetricRule / DeleteMetricRules. `credential` and `endpoint` are for tests (a static key, every call
    to one host whose answers are recorded); a deploy signs with the provider's credentials at its CloudMonitor
    endpoint (its endpoints block's, else the region's)."""

    def __init__(self, credential: Any = None, endpoint: str | None = None) -> None:
        super().__init__()
        self.credential, self.endpoint, self.settings = credential, endpoint, {}

    def configure(self, req: ConfigureRequest) -> None:
        self.settings = provider_settings(req.config, dict(os.environ))

    def _call(self, region: str, action: str, request: Any) -> None:
        signer = self.credential if self.credential is not None else credential(self.settings)
        endpoint = self.endpoint or service_endpoint(self.settings, "cms")
        call(cloudmonitor_client(signer, region, endpoint), action, request)

    def _put(self, props: dict[str, Any]) -> None:
        from alibabacloud_cms20190101.models import PutCustomMetricRuleRequest

        request = PutCustomMetricRuleRequest(**{key: props[key] for key in FIELDS})
        self._call(props["region"], "PutCustomMetricRule", request)

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._put(props)
        return CreateResult(id_=props["rule_id"], outs=dict(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._put(news)
        return UpdateResult(outs=dict(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from alibabacloud_cms20190101.models import DeleteMetricRulesRequest

        self._call(props["region"], "DeleteMetricRules", DeleteMetricRulesRequest(id=[_id]))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in (*FIELDS, "region") if olds.get(key) != news.get(key)]
        replaces = [key for key in changed if key in REPLACED_BY]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)


class CustomMetricRule(Resource, module="alicloud", name="CustomMetricRule"):
    """One CloudMonitor alert rule on a custom metric of an application group (see the module's docstring)."""

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(CustomMetricRuleProvider(), name, props, opts)
