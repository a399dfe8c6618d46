"""AWS readers of `lock resolve` against moto (SSM, EC2) and botocore's Stubber (EKS DescribeAddonVersions, which moto
does not implement: moto/eks/responses.py has no describe_addon_versions). Both run the real boto3 clients; the
Stubber checks each request's parameters and each answer against the service model (botocore/data/eks/2017-11-01).
The add-on versions and AMI names below are test values in the API's shape, not facts about AWS."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_public_parameters import publish, register
from botocore.stub import Stubber
from moto import mock_aws

from gpufleet.lock.versions import release_key, release_order
from gpufleet.preflight.aws.clients import CONFIG
from gpufleet.sources.aws import (
    default_ec2_client,
    default_eks_client,
    default_ssm_client,
    eks_addon_versions,
    ssm_base_image,
)
from gpufleet.sources.http import SourceError

REGION = "us-east-1"
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc)
UBUNTU = "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"


# --- EKS DescribeAddonVersions (Stubber) ---------------------------------------------------------------------------

def addon(name: str, *versions: tuple[str, dict[str, bool]]) -> dict[str, Any]:
    """An AddonInfo: each version with its compatibilities as {clusterVersion: defaultVersion}."""
    return {"addonName": name, "type": "networking", "owner": "aws", "publisher": "eks",
            "addonVersions": [{"addonVersion": version, "architecture": ["amd64", "arm64"],
                               "compatibilities": [{"clusterVersion": minor, "platformVersions": ["*"],
                                                    "defaultVersion": default} for minor, default in compat.items()],
                               "requiresConfiguration": False}
                              for version, compat in versions]}


def stubbed(service: str) -> tuple[Any, Stubber]:
    client = boto3.client(service, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing",
                          config=CONFIG)
    return client, Stubber(client)


def expect(stub: Stubber, name: str, minor: str, *pages: list[dict[str, Any]]) -> None:
    """Pages of DescribeAddonVersions for one add-on and minor, each request checked (nextToken from the 2nd on)."""
    for number, addons in enumerate(pages, start=1):
        params = {"addonName": name, "kubernetesVersion": minor}
        if number > 1:
            params["nextToken"] = f"page-{number}"
        answer: dict[str, Any] = {"addons": addons}
        if number < len(pages):
            answer["nextToken"] = f"page-{number + 1}"
        stub.add_response("describe_addon_versions", answer, params)


def test_eks_picks_the_default_for_the_minor_across_pages() -> None:
    eks, stub = stubbed("eks")
    # The newest vpc-cni is the default for 1.36 only; 1.35's default is on the second page.
    expect(stub, "vpc-cni", "1.35",
           [addon("vpc-cni", ("v1.21.1-eksbuild.1", {"1.36": True, "1.35": False}))],
           [addon("vpc-cni", ("v1.20.4-eksbuild.2", {"1.35": True, "1.34": False}),
                  ("v1.19.6-eksbuild.7", {"1.35": False, "1.34": True}))])
    expect(stub, "coredns", "1.35", [addon("coredns", ("v1.14.2-eksbuild.4", {"1.35": True}),
                                           ("v1.13.1-eksbuild.1", {"1.35": False}))])
    with stub:
        facts = eks_addon_versions(eks, "1.35", ["vpc-cni", "coredns"], floors={"vpc-cni": "v1.18.5"}, now=NOW)
        stub.assert_no_pending_responses()
    assert {name: fact.version for name, fact in facts.items()} == {
        "vpc-cni": "v1.20.4-eksbuild.2", "coredns": "v1.14.2-eksbuild.4"}
    assert facts["vpc-cni"].default is True
    assert facts["vpc-cni"].read_at == NOW
    assert facts["vpc-cni"].source == "eks:DescribeAddonVersions addonName=vpc-cni kubernetesVersion=1.35 (us-east-1)"


def test_eks_no_default_for_the_minor_names_the_versions_listed() -> None:
    eks, stub = stubbed("eks")
    expect(stub, "eks-pod-identity-agent", "1.35", [addon(
        "eks-pod-identity-agent", ("v1.3.8-eksbuild.2", {"1.35": False}), ("v1.3.10-eksbuild.1", {"1.35": False}),
        ("v1.3.11-eksbuild.1", {"1.36": True}))])
    with stub, pytest.raises(SourceError) as raised:
        eks_addon_versions(eks, "1.35", ["eks-pod-identity-agent"])
    message = str(raised.value)
    assert "no default for eks-pod-identity-agent on Kubernetes 1.35" in message
    # The versions listed for 1.35, newest first (1.3.10 > 1.3.8 as numbers); the 1.36-only one is not one of them.
    assert "(v1.3.10-eksbuild.1, v1.3.8-eksbuild.2)" in message


def test_eks_default_below_the_floor_is_refused() -> None:
    eks, stub = stubbed("eks")
    expect(stub, "vpc-cni", "1.35", [addon("vpc-cni", ("v1.18.4-eksbuild.9", {"1.35": True}),
                                           ("v1.18.5-eksbuild.1", {"1.35": False}))])
    with stub, pytest.raises(SourceError) as raised:
        eks_addon_versions(eks, "1.35", ["vpc-cni"], floors={"vpc-cni": "v1.18.5"})
    message = str(raised.value)
    assert "the default v1.18.4-eksbuild.9 of vpc-cni is below its floor v1.18.5" in message
    assert "versions listed: v1.18.5-eksbuild.1, v1.18.4-eksbuild.9" in message


def test_eks_addon_not_listed_for_the_minor() -> None:
    eks, stub = stubbed("eks")
    expect(stub, "vpc-cn", "1.35", [])
    with stub, pytest.raises(SourceError, match=r"EKS lists no version of vpc-cn for Kubernetes 1\.35"):
        eks_addon_versions(eks, "1.35", ["vpc-cn"])


def test_eks_access_denied_names_the_action() -> None:
    eks, stub = stubbed("eks")
    stub.add_client_error("describe_addon_versions", "AccessDeniedException", "not authorized", 403,
                          expected_params={"addonName": "vpc-cni", "kubernetesVersion": "1.35"})
    with stub, pytest.raises(SourceError) as raised:
        eks_addon_versions(eks, "1.35", ["vpc-cni"])
    assert "access denied (AccessDeniedException: not authorized)" in str(raised.value)
    assert "eks:DescribeAddonVersions to the caller" in str(raised.value)


def test_release_key_orders_eksbuild_versions() -> None:
    assert release_key("v1.18.5-eksbuild.1") > release_key("v1.18.5") > release_key("v1.18.4-eksbuild.9")
    assert release_key("v1.20.10-eksbuild.1") > release_key("v1.20.9-eksbuild.3")
    assert sorted(["v1.2.0", "latest", "v1.10.0"], key=release_order) == ["latest", "v1.2.0", "v1.10.0"]


# --- SSM parameter -> AMI (moto) -----------------------------------------------------------------------------------

@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


def test_ssm_parameter_resolves_to_the_ami_it_names_now(aws: None) -> None:
    ssm, ec2 = default_ssm_client(REGION), default_ec2_client(REGION)
    older = register(ec2, "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250901")
    newer = register(ec2, "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20251015")
    publish(UBUNTU, older, REGION, NOW)
    publish(UBUNTU, newer, REGION, NOW)
    fact = ssm_base_image(ssm, ec2, f"ssm:{UBUNTU}", now=NOW)
    assert fact.image_id == newer
    assert fact.name == "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20251015"
    assert fact.boot_mode == "uefi"  # moto's default BootMode for a registered image (moto/ec2/models/amis.py)
    assert fact.source == f"ssm:GetParameter Name={UBUNTU} (us-east-1) -> ec2:DescribeImages ImageIds={newer}"
    assert ssm_base_image(ssm, ec2, UBUNTU).image_id == newer  # the name without the lock's ssm: prefix


def test_ssm_missing_parameter_names_it_and_the_region(aws: None) -> None:
    with pytest.raises(SourceError) as raised:
        ssm_base_image(default_ssm_client(REGION), default_ec2_client(REGION), f"ssm:{UBUNTU}")
    assert f"SSM has no parameter {UBUNTU} in us-east-1" in str(raised.value)


def test_ssm_parameter_naming_a_gone_ami(aws: None) -> None:
    publish(UBUNTU, "ami-0123456789abcdef0", REGION, NOW)
    with pytest.raises(SourceError) as raised:
        ssm_base_image(default_ssm_client(REGION), default_ec2_client(REGION), UBUNTU)
    assert "EC2 in us-east-1 describes no image ami-0123456789abcdef0, which the parameter names" in str(raised.value)


def test_ssm_parameter_not_holding_an_ami(aws: None) -> None:
    publish(UBUNTU, "resolve:ssm:/elsewhere", REGION, NOW)
    with pytest.raises(SourceError, match=r"the parameter holds 'resolve:ssm:/elsewhere', not an AMI id"):
        ssm_base_image(default_ssm_client(REGION), default_ec2_client(REGION), UBUNTU)


def test_ami_without_boot_mode_records_none() -> None:
    ssm, ssm_stub = stubbed("ssm")
    ec2, ec2_stub = stubbed("ec2")
    parameter = {"Name": UBUNTU, "Type": "String", "Version": 3, "Value": "ami-0a1b2c3d4e5f60718",
                 "DataType": "aws:ec2:image"}
    ssm_stub.add_response("get_parameter", {"Parameter": parameter}, {"Name": UBUNTU})
    ec2_stub.add_response("describe_images", {"Images": [{"ImageId": "ami-0a1b2c3d4e5f60718", "Name": "older-ami",
                                                          "State": "available"}]},
                          {"ImageIds": ["ami-0a1b2c3d4e5f60718"]})
    with ssm_stub, ec2_stub:
        fact = ssm_base_image(ssm, ec2, UBUNTU)
    assert (fact.image_id, fact.name, fact.boot_mode) == ("ami-0a1b2c3d4e5f60718", "older-ami", None)


# --- credentials and endpoints -------------------------------------------------------------------------------------

@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An environment where boto3's chain finds nothing: no variables, no files, no instance metadata."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_no_credentials_says_how_to_sign_in(no_credentials: None) -> None:
    with pytest.raises(SourceError) as raised:
        eks_addon_versions(default_eks_client(REGION), "1.35", ["vpc-cni"])
    assert str(raised.value).startswith("eks:DescribeAddonVersions addonName=vpc-cni kubernetesVersion=1.35 "
                                        "(us-east-1): no AWS credentials found: sign in")


def test_default_clients_honour_aws_endpoint_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    monkeypatch.setenv("AWS_ENDPOINT_URL_EKS", "http://127.0.0.1:4567")
    assert default_ssm_client(REGION).meta.endpoint_url == "http://127.0.0.1:4566"
    assert default_eks_client(REGION).meta.endpoint_url == "http://127.0.0.1:4567"
    assert default_ec2_client("us-west-2").meta.region_name == "us-west-2"


def test_missing_sdk_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # what `import boto3` meets where the extra is not installed
    with pytest.raises(SourceError, match=r"boto3 is not installed .*run pip install -e '\.\[resolve\]'"):
        default_eks_client(REGION)
