"""AWS preflight when the account answers otherwise than with facts: expired credentials, access denied,
throttling (retried, then exhausted), timeouts; and image stacks. moto behind the real boto3 clients
(aws_preflight_account.py), botocore's Stubber where a refusal is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_preflight_account import (  # noqa: F401  (moto: the module's account, a fixture)
    NAMES,
    REGION,
    moto,
    moto_account,
    on_demand_group,
    patch_quotas,
    stubbed,
    throttle,
    train_cluster,
)
from botocore.exceptions import ReadTimeoutError
from organisation_files import organisation_file

from gpufleet.preflight.aws import brought, preflight, quotas
from gpufleet.preflight.aws.clients import ATTEMPTS, AwsClients
from gpufleet.preflight.findings import PreflightUnavailable

pytestmark = pytest.mark.usefixtures("moto")
P_ON_DEMAND = quotas.P_ON_DEMAND.code


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # botocore's standard mode sleeps up to 2**attempt seconds between retries; the retries are what is tested.
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, context: 0)


# --- credentials, throttling, timeouts --------------------------------------------------------------------------------

def test_an_expired_token_stops_before_any_other_call() -> None:
    sts, stub = stubbed("sts")
    stub.add_client_error("get_caller_identity", "ExpiredToken", "The security token included in the request is "
                          "expired", http_status_code=403)
    made: list[str] = []

    def make(service: str, region: str) -> Any:
        made.append(service)
        return sts

    with stub, pytest.raises(PreflightUnavailable, match="expired or invalid") as raised:
        preflight(train_cluster(), AwsClients(REGION, make, source="credentials from sso"))
    assert made == ["sts"] and "sso login" in str(raised.value) and "credentials from sso" in str(raised.value)


def test_access_denied_names_the_action_to_allow() -> None:
    ec2, stub = stubbed("ec2")
    stub.add_client_error("describe_vpcs", "UnauthorizedOperation", http_status_code=403)
    with stub, pytest.raises(PreflightUnavailable, match="ec2:DescribeVpcs"):
        brought.check_vpc(AwsClients(REGION, lambda s, r: ec2), "vpc-0123456789abcdef0")


def test_throttling_is_retried_then_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_quotas(monkeypatch, {P_ON_DEMAND: (NAMES[P_ON_DEMAND], 3072)})
    calls: list[str] = []
    cluster = train_cluster(node_groups=[on_demand_group()])
    needed, _ = quotas.demands(cluster)
    (quota, spot), demand = next(iter(needed.items()))
    with moto_account(hook=throttle("before-send.service-quotas.GetServiceQuota", 2, calls)) as clients:
        assert quotas.check_quota(clients, quota, spot, demand) == []
    assert len(calls) == 3


def test_throttling_past_the_retries_stops_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_quotas(monkeypatch, {})
    calls: list[str] = []
    cluster = train_cluster(node_groups=[on_demand_group()])
    (quota, spot), demand = next(iter(quotas.demands(cluster)[0].items()))
    with moto_account(hook=throttle("before-send.service-quotas.GetServiceQuota", 99, calls)) as clients, \
            pytest.raises(PreflightUnavailable, match="still throttled"):
        quotas.check_quota(clients, quota, spot, demand)
    assert len(calls) == ATTEMPTS


def test_a_timeout_is_retried_then_stops_preflight_naming_the_call() -> None:
    calls: list[str] = []

    def hook(service: str, client: Any) -> None:
        def hang(request: Any, **_: Any) -> None:
            calls.append(request.url)
            raise ReadTimeoutError(endpoint_url=request.url)

        client.meta.events.register("before-send.ec2.DescribeVpcs", hang)

    with moto_account(hook=hook) as clients, \
            pytest.raises(PreflightUnavailable, match="EC2 DescribeVpcs did not answer"):
        brought.check_vpc(clients, "vpc-0123456789abcdef0")
    assert len(calls) == ATTEMPTS


# --- image stacks ---------------------------------------------------------------------------------------------------

def images_spec(**changes: Any) -> Any:
    from gpufleet.stackfile import validate_images

    raw = {"name": "images", "cloud": "aws", "regions": ["us-east-1", "us-west-2"], "profile": "cuda12.8-r580",
           "build_instance_types": ["g5.2xlarge"], "kms_key": "create", **changes}
    return validate_images(raw)


def test_an_image_build_zone_without_any_build_type_blocks() -> None:
    # moto's us-east-1 offers g5.2xlarge in 1a to 1d and 1f, not 1e.
    with moto_account() as clients:
        failing = preflight(images_spec(network={"zone": "us-east-1e"}), clients)
        passing = preflight(images_spec(network={"zone": "us-east-1a"}), clients)
    assert [(f.field, f.blocking) for f in failing] == [("build_instance_types[0]", True)]
    assert passing == []


def test_image_keys_must_exist_in_their_regions() -> None:
    with moto_account() as clients:
        build = clients("kms").create_key()["KeyMetadata"]["Arn"]
        replica = clients("kms", "us-west-2").create_key()["KeyMetadata"]["Arn"]
        assert preflight(images_spec(kms_key=build, replica_kms_keys={"us-west-2": replica}), clients) == []
        gone = replica.replace(replica.rsplit("/", 1)[-1], "0b4e6c5a-1f0e-4d1c-9f5e-2a3b4c5d6e7f")
        findings = preflight(images_spec(kms_key=build, replica_kms_keys={"us-west-2": gone}), clients)
    assert [(f.field, f.blocking) for f in findings] == [("replica_kms_keys.us-west-2", True)]
    assert "us-west-2" in findings[0].says


def test_an_expired_sso_session_stops_preflight_naming_the_call() -> None:
    from botocore.exceptions import UnauthorizedSSOTokenError

    def hook(service: str, client: Any) -> None:
        def refuse(**_: Any) -> None:
            raise UnauthorizedSSOTokenError()

        client.meta.events.register("before-send.ec2.DescribeVpcs", refuse)

    with moto_account(hook=hook) as clients, pytest.raises(PreflightUnavailable, match="EC2 DescribeVpcs could not"):
        brought.check_vpc(clients, "vpc-0123456789abcdef0")


# --- brought keys against the caller's account (STS GetCallerIdentity) -----------------------------------------------

def test_a_key_of_another_account_than_the_callers_blocks_unless_the_organisation_grants_it(tmp_path: Path) -> None:
    # The image stack names no ARN of its own, so offline its key's account cannot be compared; moto's caller can.
    other = "arn:aws:kms:us-east-1:210987654321:key/0b4e6c5a-1f0e-4d1c-9f5e-2a3b4c5d6e7f"
    with moto_account() as clients:
        caller = clients("sts").get_caller_identity()["Account"]
        own = clients("kms").create_key()["KeyMetadata"]["Arn"]
        assert preflight(images_spec(regions=[REGION], kms_key=own), clients) == []
        found = preflight(images_spec(regions=[REGION], kms_key=other), clients)
        (finding,) = [f for f in found if f.check == "aws-key-account"]
        with organisation_file(tmp_path, "settings:\n  customer-key-account: {allowedKeyAccounts: ['210987654321']}\n"):
            granted = preflight(images_spec(regions=[REGION], kms_key=other), clients)
    assert (finding.field, finding.blocking) == ("kms_key", True)
    assert "account 210987654321" in finding.says and f"preflight runs as account {caller}" in finding.says
    assert [f.check for f in granted] == ["aws-kms-key"]  # moto's KMS has no such key: the account itself is granted
