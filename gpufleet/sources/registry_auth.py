"""Reads from a container registry that may ask for a bearer token: the anonymous token flow of Docker's registry
token authentication (a 401 whose WWW-Authenticate names a realm, service and scope; GET realm?service=&scope=;
`token` or `access_token` in the JSON answer; the read again with `Authorization: Bearer`)."""

from __future__ import annotations

import json
import re
import urllib.parse

from .http import Response, SourceError, get

ANY_STATUS = tuple(range(100, 600))  # the reader judges each status itself, to name the registry's own error
CHALLENGE_PARAMETER = re.compile(r'(\w+)=(?:"([^"]*)"|([^,\s]*))')


class RegistryClient:
    """GETs for one image; keeps the token it was given for the next read (the config blob)."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.token: str | None = None

    def get(self, url: str, headers: dict[str, str]) -> Response:
        answer = get(url, self._with_token(headers), accept_status=ANY_STATUS)
        if answer.status != 401:
            return answer
        if self.token is not None:
            raise SourceError(f"{url}: the registry refused the token its own realm issued for {self.image}")
        self.token = anonymous_token(url, answer.headers.get("WWW-Authenticate", ""), self.image)
        answer = get(url, self._with_token(headers), accept_status=ANY_STATUS)
        if answer.status == 401:
            raise SourceError(f"{url}: the registry refused an anonymous token for {self.image}: the repository "
                              "needs credentials, which `lock resolve` does not send; pin an image anyone can pull")
        return answer

    def _with_token(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self.token}"} if self.token else headers


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
