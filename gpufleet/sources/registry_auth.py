"""Reads from a container registry that may ask for a bearer token: the anonymous token flow of Docker's registry
token authentication (a 401 whose WWW-Authenticate names a realm, service and scope; GET realm?service=&scope=;
`token` or `access_token` in the JSON answer; the read again with `Authorization: Bearer`). Amazon ECR asks for
Basic credentials instead: the user's AWS credentials trade for ECR's token (GetAuthorizationToken), which EKS's own
registries (e.g. 602401143452.dkr.ecr.us-west-2.amazonaws.com) take from any account."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from .http import Response, SourceError, get

ANY_STATUS = tuple(range(100, 600))  # the reader judges each status itself, to name the registry's own error
CHALLENGE_PARAMETER = re.compile(r'(\w+)=(?:"([^"]*)"|([^,\s]*))')
# ECR registry hosts: ACCOUNT.dkr.ecr[-fips].REGION.amazonaws.com[.cn] (ECR user guide, "Private registry concepts").
ECR_HOST = re.compile(r"^(?P<account>[0-9]{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")


def ecr_registry(host: str) -> tuple[str, str] | None:
    """(account, region) of an ECR registry host; None for any other registry."""
    found = ECR_HOST.fullmatch(host)
    return (found["account"], found["region"]) if found else None


def default_ecr_client(region: str) -> Any:
    try:
        import boto3
    except ModuleNotFoundError:
        raise SourceError("reading an ECR image needs boto3: pip install -e '.[resolve]'") from None
    return boto3.client("ecr", region_name=region)


def basic_credentials(host: str, ecr_client: Callable[[str], Any] = default_ecr_client) -> str | None:
    """What a registry asking for Basic authentication takes: for ECR, GetAuthorizationToken's authorizationToken
    (base64 of AWS:password, the Basic credential itself) with the user's AWS credentials; None elsewhere."""
    found = ecr_registry(host)
    if found is None:
        return None
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ModuleNotFoundError:
        raise SourceError("reading an ECR image needs boto3: pip install -e '.[resolve]'") from None
    try:
        data = ecr_client(found[1]).get_authorization_token()["authorizationData"]
    except (BotoCoreError, ClientError) as refused:
        raise SourceError(f"{host}: ECR GetAuthorizationToken with your AWS credentials failed ({refused}); "
                          "any account may read EKS's registries once it has credentials") from None
    return data[0]["authorizationToken"]


class RegistryClient:
    """GETs for one image; keeps the token it was given for the next read (the config blob)."""

    def __init__(self, image: str, credentials: Callable[[str], str | None] = basic_credentials) -> None:
        self.image = image
        self.credentials = credentials
        self.authorization: str | None = None

    def get(self, url: str, headers: dict[str, str]) -> Response:
        answer = get(url, self._with_token(headers), accept_status=ANY_STATUS)
        if answer.status != 401:
            return answer
        if self.authorization is not None:
            raise SourceError(f"{url}: the registry refused the credential its own realm issued for {self.image}")
        challenge = answer.headers.get("WWW-Authenticate", "")
        basic = self.credentials(urllib.parse.urlsplit(url).netloc) \
            if challenge.strip().lower().startswith("basic") else None
        self.authorization = f"Basic {basic}" if basic else f"Bearer {anonymous_token(url, challenge, self.image)}"
        answer = get(url, self._with_token(headers), accept_status=ANY_STATUS)
        if answer.status == 401:
            raise SourceError(f"{url}: the registry refused an anonymous token for {self.image}: the repository "
                              "needs credentials, which `lock resolve` does not send; pin an image anyone can pull")
        return answer

    def _with_token(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "Authorization": self.authorization} if self.authorization else headers


def anonymous_token(url: str, challenge: str, image: str) -> str:
    """The token the challenge's realm issues without credentials for its service and scope."""
    scheme, _, parameters = challenge.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise SourceError(f"{url}: the registry asks for {scheme or 'no'} authentication ({challenge!r}) to read "
                          f"{image}, not an anonymous bearer token; `lock resolve` sends no credentials")
    found = {name.lower(): quoted or bare for name, quoted, bare in CHALLENGE_PARAMETER.findall(parameters)}
    realm = found.get("realm")
    if not realm:
        raise SourceError(f"{url}: the registry's bearer challenge names no realm ({challenge!r})")
    query = urllib.parse.urlencode({key: found[key] for key in ("service", "scope") if found.get(key)})
    token_url = f"{realm}{'&' if '?' in realm else '?'}{query}" if query else realm
    try:
        answer = get(token_url)
    except SourceError as refused:
        raise SourceError(f"{refused}: the token endpoint refused an anonymous token to read {image}; the "
                          "repository needs credentials, which `lock resolve` does not send") from None
    try:
        token = json.loads(answer.body)
        token = token.get("token") or token.get("access_token")
    except (ValueError, AttributeError):
        token = None
    if not isinstance(token, str) or not token:
        raise SourceError(f"{token_url}: the token endpoint's answer has no `token` or `access_token`")
    return token
