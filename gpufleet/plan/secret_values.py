"""How secrets leave a plan: masked (`[secret]`, as `pulumi preview` prints them) or, for `gpufleet diff`, as keyed
digests, so two plans can be compared for a changed secret without the secret crossing a process boundary.

A secret is a value the engine marks secret, or any value under a key whose name says it holds a credential
(`secret_key`). The digest is an HMAC-SHA256 under a key `gpufleet diff` draws for one run and hands to the base
ref's planner in SECRET_DIGEST_ENV; without the key a digest says nothing about the value.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

SECRET = "[secret]"
"""How a secret input prints: the Pulumi CLI's own rendering of a secret in a preview."""
SECRET_DIGEST_ENV = "GPUFLEET_SECRET_DIGEST"
"""Set by `gpufleet diff` for the base ref's plan: print secrets as digests under this key, never in clear."""
_DIGEST = re.compile(r"\[secret:[0-9a-f]{16}\]\Z")

# Key names whose value is a credential. Matched on the name's last words (camelCase, snake_case, dashes
# and colons split), so `adminPassword`, `client_secret`, `sasToken`, `privateKey` are masked while names
# that only point at a secret or set a policy about one (`secretName`, `kmsKeyId`, `httpTokens`,
# `sshPublicKey`) are not: those are the values a reviewer needs to see.
_SECRET_LAST_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "credential", "credentials"})
_SECRET_LAST_PAIRS = frozenset({
    ("private", "key"), ("key", "material"), ("secret", "key"), ("shared", "key"), ("access", "key"),
    ("connection", "string"), ("primary", "key"), ("secondary", "key"),
})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def secret_key(name: str) -> bool:
    """Whether an input key's name says its value is a credential (see _SECRET_LAST_WORDS)."""
    words = [w.lower() for w in _WORD.findall(name)]
    return bool(words) and (words[-1] in _SECRET_LAST_WORDS or tuple(words[-2:]) in _SECRET_LAST_PAIRS)


def is_secret_text(value: Any) -> bool:
    """Whether `value` is a masked or digested secret as a plan prints it."""
    return isinstance(value, str) and (value == SECRET or _DIGEST.match(value) is not None)


def without_secrets(value: Any) -> Any:
    """The value with every engine-marked secret inside it replaced by SECRET."""
    if isinstance(value, dict):  # an engine-marked secret is a map: tested on maps only (a plan has ~15k values)
        if is_rpc_secret(value):
            return SECRET
        return {key: without_secrets(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_secrets(item) for item in value]
    return value


def _digest(value: Any, key: bytes) -> str:
    inner = value.get("value") if is_rpc_secret(value) else value
    text = json.dumps(inner, sort_keys=True, default=str)
    return f"[secret:{hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:16]}]"


def digested(value: Any, key: bytes) -> Any:
    """The value with every secret (engine-marked, or under a credential's key name) replaced by its digest."""
    if is_rpc_secret(value):
        return _digest(value, key)
    if isinstance(value, dict):
        return {k: _digest(v, key) if secret_key(k) and v is not None else digested(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [digested(item, key) for item in value]
    return value


def is_rpc_secret(value: Any) -> bool:
    """The SDK's own test for an engine-marked secret, imported on first use: the CLI reads this module's names before
    any plan loads the SDK, and commands that do not plan never load it."""
    return _sdk_is_rpc_secret()(value)


@cache
def _sdk_is_rpc_secret() -> Callable[[Any], bool]:
    from pulumi.runtime.rpc import is_rpc_secret as sdk_is_rpc_secret

    return sdk_is_rpc_secret
