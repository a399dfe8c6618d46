"""The custom-metric alert rules' dynamic provider, run through the official CloudMonitor SDK client (signing,
sending and deserialising are the SDK's) against recorded answers (alicloud_replay): create and update put the rule
with PutCustomMetricRule, delete removes it with DeleteMetricRules, a refusal stops the deploy with its code, and
the credentials are the alicloud provider's."""

from __future__ import annotations

import base64
import json
from typing import Any

import dill
import pytest
import responses
from alicloud_replay import Replay, static_key
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from pulumi.dynamic.dynamic import serialize_provider

from components.clouds.alicloud.cloudmonitor_calls import CloudMonitorRefused
from components.clouds.alicloud.custom_metric_rule import RULE_TYPE, CustomMetricRuleProvider
from components.clouds.alicloud.deployer_credentials import (
    CREDENTIAL_KEYS,
    AssumeRoleSettingError,
    credential,
    provider_settings,
)
from gpufleet.clouds.alicloud.mock_answers import new_resource

REGION = "cn-wulanchabu"
PROPS: dict[str, Any] = {
    "rule_id": "gpufleet-train-dev-h20-xid-1a2b3c4d", "rule_name": "gpufleet-train-dev-h20-xid",
    "group_id": "7378123", "metric_name": "gpu_xid_errors",
    "resources": json.dumps([{"groupId": 7378123, "dimension": "NodeGroup=gpufleet-train-dev-h20"}]),
    "contact_groups": "gpufleet-train-alarms", "level": "CRITICAL", "statistics": "Maximum",
    "comparison_operator": ">", "threshold": "0", "evaluation_count": 1, "period": "60",
    "email_subject": "gpufleet-train-dev-h20: GPUs logged new XID errors", "region": REGION,
    "__provider": "serialized provider (the engine adds it; the rule never sends it)",
}


def provider() -> CustomMetricRuleProvider:
    return CustomMetricRuleProvider(credential=static_key())


@pytest.fixture
def replay():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        answers = Replay(mock)
        yield answers


def test_create_puts_the_rule_with_putcustommetricrule_and_its_id(replay: Replay) -> None:
    replay.answer("PutCustomMetricRule", "PutCustomMetricRule.ok")
    result = provider().create(dict(PROPS))
    ((action, sent),) = replay.calls
    assert action == "PutCustomMetricRule"
    assert sent == {
        "RuleId": PROPS["rule_id"], "RuleName": PROPS["rule_name"], "GroupId": "7378123",
        "MetricName": "gpu_xid_errors", "Resources": PROPS["resources"], "ContactGroups": "gpufleet-train-alarms",
        "Level": "CRITICAL", "Statistics": "Maximum", "ComparisonOperator": ">", "Threshold": "0",
        "EvaluationCount": "1", "Period": "60", "EmailSubject": PROPS["email_subject"],
    }
    assert result.id == PROPS["rule_id"] and result.outs == PROPS


def test_update_puts_the_same_rule_id_again(replay: Replay) -> None:
    replay.answer("PutCustomMetricRule", "PutCustomMetricRule.ok")
    news = {**PROPS, "threshold": "2"}
    assert provider().update(PROPS["rule_id"], PROPS, news).outs == news
    ((action, sent),) = replay.calls
    assert (action, sent["RuleId"], sent["Threshold"]) == ("PutCustomMetricRule", PROPS["rule_id"], "2")


def test_delete_removes_the_rule_by_id(replay: Replay) -> None:
    replay.answer("DeleteMetricRules", "DeleteMetricRules.ok")
    provider().delete(PROPS["rule_id"], dict(PROPS))
    assert replay.calls == [("DeleteMetricRules", {"Id.1": PROPS["rule_id"]})]


def test_a_refusal_inside_http_200_stops_the_create(replay: Replay) -> None:
    replay.answer("PutCustomMetricRule", "PutCustomMetricRule.refused")
    refused = r"PutCustomMetricRule refused: ParameterInvalid \(Illegal parameters.\)"
    with pytest.raises(CloudMonitorRefused, match=refused):
        provider().create(dict(PROPS))


def test_an_error_status_stops_the_delete(replay: Replay) -> None:
    replay.answer("DeleteMetricRules", "DeleteMetricRules.refused")
    with pytest.raises(CloudMonitorRefused, match="DeleteMetricRules refused: ParameterInvalid"):
        provider().delete(PROPS["rule_id"], dict(PROPS))


def test_a_changed_threshold_updates_in_place_and_a_new_id_replaces() -> None:
    rules = CustomMetricRuleProvider()
    assert rules.diff("id", PROPS, dict(PROPS)).changes is False
    changed = rules.diff("id", PROPS, {**PROPS, "threshold": "2"})
    assert changed.changes and changed.replaces == []
    moved = rules.diff("id", PROPS, {**PROPS, "rule_id": "other"})
    assert moved.changes and moved.replaces == ["rule_id"]


def test_credentials_are_the_alicloud_providers_config_then_its_environment() -> None:
    config = Config({"alicloud:accessKey": "LTAI5tConfigKey", "alicloud:secretKey": "s", "alicloud:region": REGION},
                    "gpufleet")
    env = {"ALICLOUD_ACCESS_KEY": "LTAI5tEnvKey", "ALICLOUD_SECRET_KEY": "e", "ALICLOUD_PROFILE": "ops"}
    assert provider_settings(config, env) == {"accessKey": "LTAI5tConfigKey", "secretKey": "s", "profile": "ops",
                                              "stsEndpoint": f"sts.{REGION}.aliyuncs.com"}
    assert provider_settings(Config({}, "gpufleet"), {"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI5tSdkKey"}) == {
        "accessKey": "LTAI5tSdkKey"}


def test_a_deploy_signs_with_the_stacks_alicloud_config_at_its_regions_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in (v for variables in CREDENTIAL_KEYS.values() for v in variables):
        monkeypatch.delenv(variable, raising=False)
    rules = CustomMetricRuleProvider()
    rules.configure(ConfigureRequest(Config({"alicloud:accessKey": "LTAI5tConfigKey0000000000",
                                             "alicloud:secretKey": "config-secret"}, "gpufleet")))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        Replay(mock).answer("PutCustomMetricRule", "PutCustomMetricRule.ok")
        rules.create(dict(PROPS))
        (call,) = mock.calls
    # CloudMonitor's regional endpoint, signed ACS3-HMAC-SHA256 with the config's AccessKey id.
    assert call.request.url.startswith(f"https://metrics.{REGION}.aliyuncs.com/")
    assert "Credential=LTAI5tConfigKey0000000000," in call.request.headers["Authorization"]


def test_the_providers_endpoints_block_names_the_cloudmonitor_endpoint_it_calls() -> None:
    rules = CustomMetricRuleProvider()
    rules.configure(ConfigureRequest(Config({
        "alicloud:accessKey": "LTAI5tConfigKey0000000000", "alicloud:secretKey": "config-secret",
        "alicloud:endpoints": json.dumps([{"cms": f"metrics-vpc.{REGION}.aliyuncs.com"}]),
    }, "gpufleet")))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        Replay(mock).answer("PutCustomMetricRule", "PutCustomMetricRule.ok")
        rules.create(dict(PROPS))
        (call,) = mock.calls
    assert call.request.url.startswith(f"https://metrics-vpc.{REGION}.aliyuncs.com/")


def test_an_sts_token_in_the_config_signs_as_sts() -> None:
    signer = credential({"accessKey": "STS.LTAI5tKey", "secretKey": "s", "securityToken": "token"}).get_credential()
    assert (signer.access_key_id, signer.security_token, signer.type) == ("STS.LTAI5tKey", "token", "static_sts")


ROLE_ARN = "acs:ram::1234567890123456:role/gpufleet-deployer"


def test_the_providers_assume_role_is_assumed_before_the_call_as_the_provider_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """alicloud:assumeRole set: the rule is put with the assumed role's STS credentials, the session named and timed
    as terraform-provider-alicloud's provider.go names and times it (terraform, 3600 s)."""
    for variable in (v for variables in CREDENTIAL_KEYS.values() for v in variables):
        monkeypatch.delenv(variable, raising=False)
    rules = CustomMetricRuleProvider()
    rules.configure(ConfigureRequest(Config({
        "alicloud:accessKey": "LTAI5tConfigKey0000000000", "alicloud:secretKey": "config-secret",
        "alicloud:assumeRole": json.dumps({"roleArn": ROLE_ARN, "externalId": "abc"}),
    }, "gpufleet")))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        replay = Replay(mock)
        replay.answer("AssumeRole", "AssumeRole.ok")
        replay.answer("PutCustomMetricRule", "PutCustomMetricRule.ok")
        rules.create(dict(PROPS))
        assume, put = mock.calls
    assumed = dict(replay.calls)["AssumeRole"]
    assert (assumed["RoleArn"], assumed["RoleSessionName"], assumed["DurationSeconds"], assumed["ExternalId"],
            assumed["AccessKeyId"]) == (ROLE_ARN, "terraform", "3600", "abc", "LTAI5tConfigKey0000000000")
    assert "Credential=STS.NUgYrLnoC37mZZCNnAbez2MT," in put.request.headers["Authorization"]
    assert put.request.headers["x-acs-security-token"] == "assumed-role-security-token"


def test_assume_role_fields_fall_back_to_the_providers_environment_and_a_bad_block_is_named() -> None:
    env = {"ALICLOUD_ASSUME_ROLE_ARN": ROLE_ARN, "ALICLOUD_ASSUME_ROLE_SESSION_NAME": "ci",
           "ALICLOUD_ASSUME_ROLE_SESSION_EXPIRATION": "900"}
    settings = provider_settings(Config({"alicloud:assumeRole": "{}"}, "gpufleet"), env)
    assert settings["assumeRole"] == {"roleArn": ROLE_ARN, "sessionName": "ci", "sessionExpiration": 900}
    assert "assumeRole" not in provider_settings(Config({}, "gpufleet"), env)  # no block, no role (as the provider)
    with pytest.raises(AssumeRoleSettingError, match=r"alicloud:assumeRole.roleArn is required"):
        provider_settings(Config({"alicloud:assumeRole": "{}"}, "gpufleet"), {})


def test_the_provider_survives_the_engines_serialization() -> None:
    loaded = dill.loads(base64.b64decode(serialize_provider(CustomMetricRuleProvider())))
    assert isinstance(loaded, CustomMetricRuleProvider) and loaded.credential is None


def test_the_offline_answer_is_what_the_providers_create_returns(replay: Replay) -> None:
    replay.answer("PutCustomMetricRule", "PutCustomMetricRule.ok")
    physical, outputs = new_resource(RULE_TYPE, "train-h20-xid", dict(PROPS), REGION)
    assert physical == provider().create(dict(PROPS)).id and outputs == {}
