"""The alicloud provider's assume_role_with_oidc, honoured by the dynamic resources as terraform-provider-alicloud
honours it: the SDK's own OIDC credentials provider exchanges the token with STS AssumeRoleWithOIDC (recorded
answers through the official Auto Scaling client, as the group sizing a deploy runs, and the credentials library's
own HTTP call), only when no AccessKey is set, before assume_role, at the region's STS endpoint; a bad block is
named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import responses
from alicloud_replay import Replay
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config

from components.clouds.alicloud.deployer_credentials import (
    ASSUME_ROLE_KEYS,
    CREDENTIAL_KEYS,
    OIDC_KEYS,
    AssumeRoleSettingError,
    oidc_token_file,
    provider_settings,
)
from components.clouds.alicloud.group_size import ScalingGroupSizeProvider

REGION = "cn-wulanchabu"
OIDC_ROLE = "acs:ram::1234567890123456:role/gpufleet-ci"
IDP = "acs:ram::1234567890123456:oidc-provider/github"
DEPLOYER_ROLE = "acs:ram::1234567890123456:role/gpufleet-deployer"
TOKEN = "eyJraWQiOiJKQzl3eHpyaHFKMGd0.payload.signature"
SIZE: dict[str, Any] = {"scaling_group_id": "asg-2ze0d2ik6hzqpnw4abcd", "min_size": 0, "desired_capacity": 2,
                        "region": REGION}


@pytest.fixture(autouse=True)
def no_deployer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider's environment variables unset: each test names what it sets."""
    for variables in (*CREDENTIAL_KEYS.values(), *ASSUME_ROLE_KEYS.values(), *OIDC_KEYS.values()):
        for variable in variables:
            monkeypatch.delenv(variable, raising=False)


def size_group(config: dict[str, Any], *answers: tuple[str, str]) -> tuple[Replay, list[Any]]:
    """Configure the group sizing's provider with the stack `config` and size one group against recorded answers."""
    sizes = ScalingGroupSizeProvider()
    sizes.configure(ConfigureRequest(Config({"alicloud:region": REGION, **config}, "gpufleet")))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        replay = Replay(mock)
        for action, fixture in (*answers, ("ModifyScalingGroup", "ModifyScalingGroup.ok")):
            replay.answer(action, fixture)
        sizes.create(dict(SIZE))
        return replay, list(mock.calls)


def test_the_oidc_token_file_is_exchanged_at_the_regions_sts_and_the_group_is_sized_as_that_session(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    block = {"oidcProviderArn": IDP, "roleArn": OIDC_ROLE, "oidcTokenFile": str(token_file)}
    replay, (exchange, sized) = size_group({"alicloud:assumeRoleWithOidc": json.dumps(block)},
                                           ("AssumeRoleWithOIDC", "AssumeRoleWithOIDC.ok"))
    assert [action for action, _ in replay.calls] == ["AssumeRoleWithOIDC", "ModifyScalingGroup"]
    sent = dict(replay.calls)["AssumeRoleWithOIDC"]
    # Named and timed as the provider names them (session "terraform"; STS's 3600 s default).
    assert (sent["RoleArn"], sent["OIDCProviderArn"], sent["OIDCToken"], sent["RoleSessionName"],
            sent["DurationSeconds"]) == (OIDC_ROLE, IDP, TOKEN, "terraform", "3600")
    assert "Policy" not in sent
    assert exchange.request.url.startswith(f"https://sts.{REGION}.aliyuncs.com/")
    assert "Credential=STS.OidcSessionKey000000000," in sized.request.headers["Authorization"]
    assert sized.request.headers["x-acs-security-token"] == "oidc-session-security-token"


def test_an_inline_token_and_the_providers_environment_fallbacks_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in {"ALIBABA_CLOUD_OIDC_PROVIDER_ARN": IDP, "ALIBABA_CLOUD_ROLE_ARN": OIDC_ROLE,
                            "ALIBABA_CLOUD_OIDC_TOKEN": TOKEN, "ALIBABA_CLOUD_ROLE_SESSION_NAME": "ci-run-7"}.items():
        monkeypatch.setenv(variable, value)
    block = {"policy": '{"Version":"1"}', "sessionExpiration": 900}
    replay, _ = size_group({"alicloud:assumeRoleWithOidc": json.dumps(block)},
                           ("AssumeRoleWithOIDC", "AssumeRoleWithOIDC.ok"))
    sent = dict(replay.calls)["AssumeRoleWithOIDC"]
    assert (sent["RoleArn"], sent["OIDCProviderArn"], sent["OIDCToken"], sent["RoleSessionName"],
            sent["DurationSeconds"], sent["Policy"]) == (OIDC_ROLE, IDP, TOKEN, "ci-run-7", "900", '{"Version":"1"}')


def test_assume_role_is_assumed_with_the_oidc_sessions_keys_as_the_provider_chains_them(tmp_path: Path) -> None:
    """RefreshAuthCredential: OIDC first, then assume_role signed with the keys the OIDC exchange returned."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    replay, (_, assume, sized) = size_group({
        "alicloud:assumeRoleWithOidc": {"oidcProviderArn": IDP, "roleArn": OIDC_ROLE, "oidcTokenFile": str(token_file)},
        "alicloud:assumeRole": json.dumps({"roleArn": DEPLOYER_ROLE}),
    }, ("AssumeRoleWithOIDC", "AssumeRoleWithOIDC.ok"), ("AssumeRole", "AssumeRole.ok"))
    assert [action for action, _ in replay.calls] == ["AssumeRoleWithOIDC", "AssumeRole", "ModifyScalingGroup"]
    # The region's STS, as the provider's (provider.go:2487-2488), not the SDK's default global sts.aliyuncs.com.
    assert assume.request.url.startswith(f"https://sts.{REGION}.aliyuncs.com/")
    assumed = dict(replay.calls)["AssumeRole"]
    assert (assumed["RoleArn"], assumed["AccessKeyId"], assumed["SecurityToken"]) == (
        DEPLOYER_ROLE, "STS.OidcSessionKey000000000", "oidc-session-security-token")
    assert "Credential=STS.NUgYrLnoC37mZZCNnAbez2MT," in sized.request.headers["Authorization"]


def test_an_accesskey_wins_over_the_oidc_block_as_in_the_provider(tmp_path: Path) -> None:
    replay, (sized,) = size_group({
        "alicloud:accessKey": "LTAI5tConfigKey0000000000", "alicloud:secretKey": "config-secret",
        "alicloud:assumeRoleWithOidc": {"oidcProviderArn": IDP, "roleArn": OIDC_ROLE, "oidcToken": TOKEN},
    })
    assert [action for action, _ in replay.calls] == ["ModifyScalingGroup"]
    assert "Credential=LTAI5tConfigKey0000000000," in sized.request.headers["Authorization"]


@pytest.mark.parametrize(("block", "message"), [
    ("[]", r"alicloud:assumeRoleWithOidc must be an object"),
    ({"roleArn": OIDC_ROLE, "oidcToken": TOKEN}, r"alicloud:assumeRoleWithOidc.oidcProviderArn is required"),
    ({"oidcProviderArn": IDP, "oidcToken": TOKEN}, r"alicloud:assumeRoleWithOidc.roleArn is required"),
    ({"oidcProviderArn": IDP, "roleArn": OIDC_ROLE}, r"one of oidcToken, oidcTokenFile must be specified"),
    ({"oidcProviderArn": IDP, "roleArn": OIDC_ROLE, "oidcToken": "abc"}, r"oidcToken must be 4-20000 characters"),
    ({"oidcProviderArn": IDP, "roleArn": OIDC_ROLE, "oidcToken": TOKEN, "sessionExpiration": 600},
     r"sessionExpiration must be at least 900 seconds, got 600"),
])
def test_a_bad_oidc_block_is_named(block: Any, message: str) -> None:
    with pytest.raises(AssumeRoleSettingError, match=message):
        provider_settings(Config({"alicloud:assumeRoleWithOidc": block if isinstance(block, str) else
                                  json.dumps(block)}, "gpufleet"), {})


def test_an_inline_token_is_written_once_where_only_the_deployer_reads_it() -> None:
    oidc = {"oidcProviderArn": IDP, "roleArn": OIDC_ROLE, "oidcToken": TOKEN + ".inline"}
    path = Path(oidc_token_file(oidc))
    assert path.read_text() == TOKEN + ".inline" and oidc_token_file(dict(oidc)) == str(path)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700


def test_the_providers_endpoints_block_sends_sts_and_the_groups_sizing_where_it_names(tmp_path: Path) -> None:
    """alicloud:endpoints as the provider takes it: a network that reaches only VPC endpoints reaches these."""
    endpoints = [{"sts": f"sts-vpc.{REGION}.aliyuncs.com", "ess": f"ess-vpc.{REGION}.aliyuncs.com", "ecs": ""}]
    replay, (assume, sized) = size_group({
        "alicloud:accessKey": "LTAI5tConfigKey0000000000", "alicloud:secretKey": "config-secret",
        "alicloud:assumeRole": json.dumps({"roleArn": DEPLOYER_ROLE}), "alicloud:endpoints": json.dumps(endpoints),
    }, ("AssumeRole", "AssumeRole.ok"))
    assert [action for action, _ in replay.calls] == ["AssumeRole", "ModifyScalingGroup"]
    assert assume.request.url.startswith(f"https://sts-vpc.{REGION}.aliyuncs.com/")
    assert sized.request.url.startswith(f"https://ess-vpc.{REGION}.aliyuncs.com/")
    assert "Credential=STS.NUgYrLnoC37mZZCNnAbez2MT," in sized.request.headers["Authorization"]


@pytest.mark.parametrize(("key", "value", "message"), [
    ("endpoints", '"sts.example"', r"alicloud:endpoints must be a list of objects"),
    ("endpoints", '[["sts"]]', r"alicloud:endpoints must be a list of objects"),
    ("endpoints", "[{sts: x}", r"alicloud:endpoints is not the structured value the provider takes"),
    ("assumeRole", "{roleArn", r"alicloud:assumeRole is not the structured value the provider takes"),
])
def test_a_provider_block_that_is_not_what_the_provider_takes_is_named(key: str, value: str, message: str) -> None:
    with pytest.raises(AssumeRoleSettingError, match=message):
        provider_settings(Config({f"alicloud:{key}": value}, "gpufleet"), {})
