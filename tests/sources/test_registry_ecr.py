"""Amazon ECR answers a Basic challenge: the reader trades the user's AWS credentials for ECR's token
(GetAuthorizationToken, through boto3's own client answered by botocore's Stubber) and reads a real registry that
checks that credential (Debian's docker-registry with htpasswd authentication)."""

from __future__ import annotations

import base64
from pathlib import Path

import bcrypt
import boto3
import pytest
from botocore.stub import Stubber
from local_registry import local_registry, push_image

from gpufleet.sources import registry_auth
from gpufleet.sources.http import SourceError
from gpufleet.sources.registry import resolve_image

PASSWORD = "ecr-password-of-the-test"
TOKEN = base64.b64encode(f"AWS:{PASSWORD}".encode()).decode()


def test_ecr_hosts_are_recognised_and_others_are_not() -> None:
    assert registry_auth.ecr_registry("602401143452.dkr.ecr.us-west-2.amazonaws.com") == ("602401143452", "us-west-2")
    assert registry_auth.ecr_registry("123456789012.dkr.ecr-fips.us-east-1.amazonaws.com") == (
        "123456789012", "us-east-1")
    assert registry_auth.ecr_registry("public.ecr.aws") is None
    assert registry_auth.ecr_registry("602401143452.dkr.ecr.us-west-2.amazonaws.com.evil.example") is None


def stubbed_ecr(region: str, token: str | None, calls: list[str]) -> object:
    client = boto3.client("ecr", region_name=region, aws_access_key_id="test", aws_secret_access_key="test")
    stubber = Stubber(client)
    if token is None:
        stubber.add_client_error("get_authorization_token", "AccessDeniedException", "not authorized")
    else:
        stubber.add_response("get_authorization_token", {"authorizationData": [
            {"authorizationToken": token, "proxyEndpoint": "https://example"}]}, {})
    stubber.activate()
    calls.append(region)
    return client


@pytest.fixture
def basic_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    htpasswd = tmp_path / "htpasswd"
    htpasswd.write_bytes(b"AWS:" + bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)) + b"\n")
    auth = {"htpasswd": {"realm": "ecr-test", "path": str(htpasswd)}}
    with local_registry(tmp_path / "registry", auth=auth) as registry:
        # The local registry stands for an EKS registry in us-west-2 (the host is all that tells ECR apart).
        monkeypatch.setattr(registry_auth, "ecr_registry",
                            lambda host: ("602401143452", "us-west-2") if host == registry.host else None)
        yield registry


def test_an_ecr_image_is_read_with_the_token_aws_credentials_trade_for(tmp_path: Path, basic_registry) -> None:
    pushed = push_image(basic_registry, tmp_path / "work", "eks/aws-efa-k8s-device-plugin", "v0.5.20",
                        ["linux/amd64"], creds=f"AWS:{PASSWORD}")
    calls: list[str] = []
    fact = resolve_image(pushed.reference, credentials=lambda host: registry_auth.basic_credentials(
        host, lambda region: stubbed_ecr(region, TOKEN, calls)))
    assert fact.digest == pushed.digest and calls == ["us-west-2"]


def test_a_wrong_token_or_a_refused_call_fails_naming_why(tmp_path: Path, basic_registry) -> None:
    pushed = push_image(basic_registry, tmp_path / "work", "eks/x", "v1", ["linux/amd64"], creds=f"AWS:{PASSWORD}")
    wrong = base64.b64encode(b"AWS:not-it").decode()
    with pytest.raises(SourceError, match="refused"):
        resolve_image(pushed.reference, credentials=lambda host: registry_auth.basic_credentials(
            host, lambda region: stubbed_ecr(region, wrong, [])))
    with pytest.raises(SourceError, match="ECR GetAuthorizationToken with your AWS credentials failed"):
        resolve_image(pushed.reference, credentials=lambda host: registry_auth.basic_credentials(
            host, lambda region: stubbed_ecr(region, None, [])))
