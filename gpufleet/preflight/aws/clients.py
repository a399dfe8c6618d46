"""The boto3 clients AWS preflight asks, and the one wrapper every call goes through.

Each client retries throttling and transient errors in botocore's standard retry mode and bounds each attempt's
connect and read time (botocore/config.py: `retries` {'mode', 'total_max_attempts'}, `connect_timeout`,
`read_timeout`). An answer saying a resource does not exist comes back to the check as None; any other refusal
(credentials missing, expired or refused, access denied, throttling that outlasted the retries, a timeout, an
unreachable endpoint) stops preflight with PreflightUnavailable naming the call and the fix (exit 2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
    ReadTimeoutError,
    TokenRetrievalError,
)

from ..findings import PreflightUnavailable

ATTEMPTS = 5
CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
    connect_timeout=5,
    read_timeout=20,
)
# The Cost Explorer API has one endpoint, in us-east-1 (botocore/data/endpoints.json: ce is not regionalized,
# partitionEndpoint aws-global, credentialScope us-east-1).
COST_EXPLORER_REGION = "us-east-1"

# Error codes common to every AWS API (AWS "Common Errors": ExpiredTokenException, RequestExpired,
# UnrecognizedClientException, IncompleteSignature, InvalidClientTokenId, AccessDeniedException, NotAuthorized,
# OptInRequired; docs.aws.amazon.com/awsconsolehelpdocs/latest/gsg/common-errors.html), the Query APIs' forms of
# them (ExpiredToken, InvalidClientTokenId, SignatureDoesNotMatch, AccessDenied), and EC2's own (AuthFailure,
# UnauthorizedOperation: "Error codes for the Amazon EC2 API", AWSEC2/latest/APIReference/errors-overview.html)
# and SNS's (AuthorizationError: SNS API reference, GetTopicAttributes errors).
CREDENTIAL_CODES = frozenset({
    "ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidClientTokenId", "UnrecognizedClientException",
    "AuthFailure", "SignatureDoesNotMatch", "InvalidSignatureException", "IncompleteSignature",
})
DENIED_CODES = frozenset({
    "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError", "NotAuthorized",
    "OptInRequired",
})
# What botocore's standard mode retries as throttling (botocore/retries/standard.py, ThrottledRetryableChecker).
THROTTLED_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException", "TooManyRequestsException",
    "ProvisionedThroughputExceededException", "TransactionInProgressException", "RequestLimitExceeded",
    "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
    "EC2ThrottledException",
})
NO_CREDENTIALS = (
    "no AWS credentials found: sign in with `aws sso login --profile NAME` (then AWS_PROFILE=NAME) or `aws configure`, "
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an instance or task role is available"
)


@dataclass
class AwsClients:
    """boto3 clients by service and region, made once each (a client is thread-safe once made, its creation not)."""

    region: str
    make: Callable[[str, str], Any]
    """(service, region) -> a botocore client configured with CONFIG."""
    source: str = "the AWS credential chain"
    """Where the credentials came from, for messages (botocore's Credentials.method, e.g. env, sso)."""
    _made: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, service: str, region: str | None = None) -> Any:
        key = (service, region or self.region)
        with self._lock:
            if key not in self._made:
                self._made[key] = self.make(*key)
            return self._made[key]


def default_clients(region: str) -> AwsClients:
    """Clients from the user's usual credential chain (environment, AWS_PROFILE and ~/.aws, SSO, roles)."""
    import boto3

    try:
        session = boto3.Session(region_name=region)
        credentials = session.get_credentials()
    except BotoCoreError as exc:  # a named profile that does not exist, a broken config file
        raise PreflightUnavailable(f"cannot read the AWS configuration: {exc}") from None
    if credentials is None:
        raise PreflightUnavailable(NO_CREDENTIALS)
    return AwsClients(
        region,
        lambda service, where: session.client(service, region_name=where, config=CONFIG),
        source=f"credentials from {credentials.method}" if credentials.method else "the AWS credential chain",
    )


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _matches(code: str, missing: tuple[str, ...]) -> bool:
    """A code listed, or one under a listed prefix ending in '.' (InvalidSubnetID. covers .NotFound, .Malformed)."""
    return any(code == m or (m.endswith(".") and code.startswith(m)) for m in missing)


def ask(clients: AwsClients, service: str, operation: str, *, missing: tuple[str, ...] = (),
        region: str | None = None, **params: Any) -> dict[str, Any] | None:
    """`operation` of `service` with params; None when AWS answers with an error code in `missing` (the thing asked
    about does not exist); PreflightUnavailable for any refusal the user fixes outside the stack."""
    client = clients(service, region)
    try:
        return getattr(client, operation)(**params)
    except ClientError as exc:
        if _matches(error_code(exc), missing):
            return None
        raise refused(clients, client, operation, exc) from None
    except (NoCredentialsError, PartialCredentialsError):
        raise PreflightUnavailable(NO_CREDENTIALS) from None
    except (TokenRetrievalError, CredentialRetrievalError) as exc:
        raise PreflightUnavailable(
            f"the AWS credentials could not be refreshed ({exc}): sign in again (`aws sso login --profile NAME`, or "
            "renew the role session) and run preflight again") from None
    except (ConnectTimeoutError, ReadTimeoutError, EndpointConnectionError) as exc:
        raise PreflightUnavailable(
            f"{_call(client, operation)} did not answer after {ATTEMPTS} attempts ({exc}): check the network, a proxy "
            f"(HTTPS_PROXY) and that {region or clients.region} is a region the account uses, then run again") from None
    except ParamValidationError:
        raise  # a request this program built wrong: an internal error (exit 3), not the user's to fix
    except BotoCoreError as exc:  # an SSO session that expired, a credential process that failed, ...
        raise PreflightUnavailable(f"{_call(client, operation)} could not be sent ({exc}); fix the AWS "
                                   "configuration it names and run preflight again") from None


def _call(client: Any, operation: str) -> str:
    model = client.meta.service_model
    return f"{model.service_id} {client.meta.method_to_api_mapping.get(operation, operation)}"


def refused(clients: AwsClients, client: Any, operation: str, exc: ClientError) -> PreflightUnavailable:
    """The exit-2 error for a refusal of `operation`, naming the call, the credential source and the fix."""
    code, text = error_code(exc), exc.response.get("Error", {}).get("Message", "")
    call = _call(client, operation)
    said = f"{code}: {text}" if text else code
    if code in CREDENTIAL_CODES:
        return PreflightUnavailable(
            f"{call} refused {clients.source} ({said}): the credentials are expired or invalid; sign in again "
            "(`aws sso login --profile NAME`, a new session token, or new keys) and run preflight again")
    if code in DENIED_CODES:
        action = f"{client.meta.service_model.signing_name}:{call.split()[-1]}"
        return PreflightUnavailable(
            f"{call} was denied to {clients.source} ({said}): preflight asks read-only questions; allow {action} "
            "(the AWS managed policy ReadOnlyAccess covers every call it makes) and run again")
    if code in THROTTLED_CODES:
        return PreflightUnavailable(
            f"{call} was still throttled after {ATTEMPTS} attempts ({said}): other callers share the account's "
            "request rate; run preflight again in a minute")
    return PreflightUnavailable(f"{call} failed ({said}); fix what AWS says and run preflight again")
