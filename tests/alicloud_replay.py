"""Recorded Alibaba Cloud answers replayed under the official SDK clients, at the HTTP layer they send through.

tea_openapi 0.4 signs each call (ACS3-HMAC-SHA256) and sends it with darabonba-core's `requests` session: POST to
the product's endpoint, the action in the `x-acs-action` header, its parameters in the query string (or a form body).
`responses` stands in for the network under that session, so everything above it (signing, retries, timeouts,
deserialisation, the SDK's exceptions) is the real client code. Answers are chosen by action and, where given, by
parameters; each fixture file under tests/data/preflight/alicloud/ follows the API reference its `_source` cites.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlparse

import requests
import responses
from alibabacloud_credentials.client import Client as CredentialClient
from alibabacloud_credentials.models import Config as CredentialConfig

from gpufleet.preflight.alicloud import AlicloudClients, Retry, make_clients

FIXTURES = Path(__file__).parent / "data" / "preflight" / "alicloud"
ANY_ENDPOINT = re.compile(r"https://[a-z0-9.-]+\.aliyuncs\.com/.*")
# Waits of microseconds: the retries run as in production, only shorter.
FAST = Retry(period_ms=1, cap_ms=2, connect_timeout_ms=1000, read_timeout_ms=1000)


def fixture(name: str, *directories: Path) -> dict[str, Any]:
    """The fixture `name` from the first of `directories` (default: preflight's) that holds it."""
    found = [d / f"{name}.json" for d in directories or (FIXTURES,) if (d / f"{name}.json").exists()]
    assert found, f"no fixture {name}.json in {[str(d) for d in directories or (FIXTURES,)]}"
    data = json.loads(found[0].read_text())
    assert data.get("_source"), f"{name}.json must cite the API reference it follows in _source"
    return data


class Replay:
    """Answers by action: `answer(action, *fixtures, **params)` replies with the fixtures in turn (the last one
    repeats) to calls of `action` whose parameters include `params`. Fixtures come from `directories` (default:
    preflight's), the first that holds a name."""

    def __init__(self, mock: responses.RequestsMock, *directories: Path) -> None:
        self.directories = directories
        self.rules: list[tuple[str, dict[str, str], list[str]]] = []
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.unexpected: list[tuple[str, dict[str, str]]] = []
        mock.add_callback(responses.POST, ANY_ENDPOINT, callback=self._reply)
        mock.add_callback(responses.GET, ANY_ENDPOINT, callback=self._reply)

    def answer(self, action: str, *names: str, **params: str) -> None:
        # A later rule for the same call wins: tests override the clean account's answers.
        self.rules.insert(0, (action, params, list(names)))

    def count(self, action: str) -> int:
        return sum(1 for called, _ in self.calls if called == action)

    def _reply(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        params = dict(parse_qsl(urlparse(request.url).query))
        # ROA/OpenAPI calls name the action in a header; the RPC-style calls (STS AssumeRole from the credentials
        # library) in the query.
        action = request.headers.get("x-acs-action") or params.get("Action", "")
        body = request.body.decode() if isinstance(request.body, bytes) else request.body
        if body and "x-www-form-urlencoded" in request.headers.get("content-type", ""):
            params.update(parse_qsl(body))
        self.calls.append((action, params))
        for wanted, match, names in self.rules:
            if wanted == action and all(params.get(k) == v for k, v in match.items()):
                name = names.pop(0) if len(names) > 1 else names[0]
                data = fixture(name, *self.directories)
                if data.get("raise") == "ReadTimeout":
                    raise requests.exceptions.ReadTimeout(f"read timed out ({name})")
                headers = {"content-type": "application/json;charset=utf-8", **data.get("headers", {})}
                return data.get("status", 200), headers, json.dumps(data["body"])
        self.unexpected.append((action, params))
        return 500, {}, json.dumps({"Code": "NoRecordedAnswer", "Message": f"no fixture for {action} {params}"})


def static_key() -> CredentialClient:
    """A static test AccessKey to sign with (the replay checks no signature)."""
    return CredentialClient(CredentialConfig(type="access_key", access_key_id="LTAI5tTestKeyId0000000000",
                                             access_key_secret="test-secret"))


def clients(region: str) -> AlicloudClients:
    """The official clients, signed with the static test key."""
    return make_clients(region, credential=static_key(), retry=FAST)
