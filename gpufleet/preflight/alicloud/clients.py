"""The Alibaba Cloud SDK clients preflight asks, and the one way every call is made: retried on throttling by the SDK,
bounded in time, its refusals turned into PreflightUnavailable or a plain "not found".

SDK: the V2 Python clients (alibabacloud_<product><version>) on alibabacloud_tea_openapi 0.4, which send through
darabonba-core's `requests` session. Retries: tea_openapi 0.4's request loops (client.py do_request) read only
Config.retry_options (darabonba.policy.retry.RetryOptions): RuntimeOptions.autoretry / max_attempts are no longer read
there, so the retry policy is set on each client's Config. Timeouts: Config.connect_timeout / read_timeout (ms).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from alibabacloud_cms20190101.client import Client as CmsClient
from alibabacloud_credentials.client import Client as CredentialClient
from alibabacloud_credentials.exceptions import CredentialException
from alibabacloud_cs20151215.client import Client as CsClient
from alibabacloud_ecs20140526.client import Client as EcsClient
from alibabacloud_kms20160120.client import Client as KmsClient
from alibabacloud_quotas20200510.client import Client as QuotasClient
from alibabacloud_ram20150501.client import Client as RamClient
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
from alibabacloud_tea_openapi.utils_models import Config
from alibabacloud_vpc20160428.client import Client as VpcClient
from darabonba.exceptions import RetryError
from darabonba.policy.retry import RetryOptions
from Tea.exceptions import UnretryableException

from ..findings import PreflightUnavailable

# Alibaba Cloud error center, product "Public" (the codes every API shares), as terraform-provider-alicloud lists them
# (alicloud common error constants, linking error-center.alibabacloud.com/status/product/Public); the HTTP statuses
# are the ones the API references give (ECS: Throttling 400 on DescribeInstanceAutoRenewAttribute, Throttling.User
# 400 on DescribePrice; KMS common errors: InvalidAccessKeyId.NotFound 404).
THROTTLING = ("Throttling", "Throttling.User", "Throttling.Api", "ServiceUnavailable")
CREDENTIALS_REFUSED = (
    "InvalidAccessKeyId.NotFound", "InvalidAccessKeyId.Inactive", "InvalidAccessKeyId", "SignatureDoesNotMatch",
    "IncompleteSignature", "Forbidden.AccessKeyDisabled", "InvalidSecurityToken.Expired",
    "InvalidSecurityToken.Malformed", "InvalidSecurityToken.MismatchWithAccessKey", "MissingSecurityToken",
)
DENIED = ("Forbidden.RAM", "NoPermission", "Forbidden.NoPermission", "Forbidden", "InvalidAuthorization")
# ECS DescribeAvailableResource 404s Invalid.RegionId / Unavailable.Regions / InvalidRegionId.NotFound and 400
# InvalidRegionId.MalFormed; DescribeSecurityGroupAttribute 404 InvalidRegionId.NotFound; Public InvalidRegion.NotFound.
UNKNOWN_REGION = ("Invalid.RegionId", "Unavailable.Regions", "InvalidRegionId.NotFound", "InvalidRegionId.MalFormed",
                  "InvalidRegion.NotFound")

CREDENTIAL_CHAIN = (
    "the Alibaba Cloud default credential chain (ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET "
    "[/ ALIBABA_CLOUD_SECURITY_TOKEN] in the environment, the aliyun CLI profile ~/.aliyun/config.json, "
    "~/.alibabacloud/credentials.ini, the ECS instance RAM role)"
)


@dataclass(frozen=True)
class Retry:
    """Throttling answers are retried up to `throttled_attempts` calls in all, with exponential backoff and equal
    jitter from `period_ms` (capped at `cap_ms`); a call without an answer (timeout, refused connection) is tried
    `unanswered_attempts` times."""

    throttled_attempts: int = 5
    unanswered_attempts: int = 2
    period_ms: int = 200
    cap_ms: int = 5000
    connect_timeout_ms: int = 5000
    read_timeout_ms: int = 15000

    def options(self) -> RetryOptions:
        backoff = {"policy": "ExponentialWithEqualJitter", "period": self.period_ms, "cap": self.cap_ms}
        return RetryOptions({
            "retryable": True,
            "retryCondition": [
                # ThrottlingException: an answer with x-acs-retry-after (tea_openapi client.py); the codes: any other.
                {"maxAttempts": self.throttled_attempts, "backoff": backoff, "maxDelay": self.cap_ms,
                 "exception": ["ThrottlingException"], "errorCode": list(THROTTLING)},
                # darabonba DaraCore.do_action raises RetryError for an IOError (requests' Timeout, ConnectionError).
                {"maxAttempts": self.unanswered_attempts, "backoff": backoff, "maxDelay": self.cap_ms,
                 "exception": ["RetryError"]},
            ],
        })


@dataclass(frozen=True)
class AlicloudClients:
    """One client per product, all for the stack's region (RAM and Quota Center answer for the whole account)."""

    region: str
    ecs: Any
    vpc: Any
    ram: Any
    kms: Any
    quotas: Any
    cms: Any
    cs: Any
    retry: Retry = Retry()

    def call(self, service: str, action: str, request: Any, missing: Iterable[str] = ()) -> dict[str, Any] | None:
        """The answer's body as the API reference writes it (its own field names), or None when the API answers one
        of the `missing` error codes (the thing asked about does not exist). Every other refusal is
        PreflightUnavailable naming the call and what to do."""
        client = getattr(self, service)
        method = getattr(client, _snake(action))
        try:
            response = method(request)
        except AlibabaCloudException as error:
            if error.code in tuple(missing):
                return None
            raise PreflightUnavailable(self._refused(service, action, error)) from None
        except UnretryableException as error:
            raise PreflightUnavailable(self._unanswered(service, action, error.inner_exception)) from None
        except CredentialException as error:
            raise PreflightUnavailable(f"no Alibaba Cloud credentials for {service} {action}: {CREDENTIAL_CHAIN} "
                                       f"gave none ({error}); run `aliyun configure` or set the variables") from None
        return response.body.to_map() if response.body is not None else {}

    def _refused(self, service: str, action: str, error: AlibabaCloudException) -> str:
        code, message = error.code, _message(error)
        if code in CREDENTIALS_REFUSED:
            return (f"Alibaba Cloud refused the credentials on {service} {action}: {code} ({message}); refresh them "
                    f"({CREDENTIAL_CHAIN}), e.g. `aliyun configure` or a new STS token")
        if code in DENIED:
            return (f"{service} {action} denied: {code} ({message}); grant the caller the read-only RAM action "
                    f"{service}:{action} (e.g. the AliyunReadOnlyAccess policy)")
        if code in UNKNOWN_REGION:
            return (f"{service} {action}: region {self.region!r} is unknown to Alibaba Cloud ({code}); fix region "
                    "and alicloud:region in the stack file")
        if code in THROTTLING:
            return (f"{service} {action} still throttled after {self.retry.throttled_attempts} tries ({code}); run "
                    "preflight again in a minute")
        return f"{service} {action} refused: {code} ({message}); fix what it names and run preflight again"

    def _unanswered(self, service: str, action: str, inner: BaseException | None) -> str:
        if isinstance(inner, CredentialException):
            return (f"no Alibaba Cloud credentials for {service} {action}: {CREDENTIAL_CHAIN} gave none ({inner}); "
                    "run `aliyun configure` or set the variables")
        why = inner.message if isinstance(inner, RetryError) else str(inner)
        return (f"{service} {action}: no answer from Alibaba Cloud in {self.region} after "
                f"{self.retry.unanswered_attempts} tries ({why}); check the network (proxy, firewall) and the region")


def _snake(action: str) -> str:
    """DescribeVSwitchAttributes -> describe_vswitch_attributes, DescribeClustersV1 -> describe_clusters_v1: the SDK
    client's method name."""
    return re.sub(r"(?<!^)(?=[A-Z][a-z]|V[0-9])", "_", action.replace("VSwitch", "Vswitch")).lower()


def _message(error: AlibabaCloudException) -> str:
    data = error.data if isinstance(error.data, dict) else {}
    return str(data.get("Message") or data.get("message") or error.message)


def make_clients(region: str, credential: Any = None, retry: Retry | None = None,
                 endpoint: str | None = None) -> AlicloudClients:
    """The official clients for `region`, signed with `credential` (default: the default credential chain, resolved
    once here so a missing credential stops before any call). `endpoint` sends every product to one host (tests)."""
    retry = retry or Retry()
    if credential is None:
        credential = CredentialClient()
        try:
            credential.get_credential()
        except CredentialException as error:
            raise PreflightUnavailable(f"no Alibaba Cloud credentials: {CREDENTIAL_CHAIN} gave none ({error}); run "
                                       "`aliyun configure` or set the variables") from None

    def config() -> Config:
        return Config(credential=credential, region_id=region, endpoint=endpoint, retry_options=retry.options(),
                      connect_timeout=retry.connect_timeout_ms, read_timeout=retry.read_timeout_ms)

    return AlicloudClients(
        region=region, ecs=EcsClient(config()), vpc=VpcClient(config()), ram=RamClient(config()),
        kms=KmsClient(config()), quotas=QuotasClient(config()), cms=CmsClient(config()), cs=CsClient(config()),
        retry=retry,
    )
