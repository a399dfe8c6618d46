"""Unknown-aware reads of resource properties.

During `pulumi preview` the policy SDK hands rules proxies that raise `UnknownValueError` when a value
is not known yet. `plain` turns those proxies into ordinary dicts and lists with `UNKNOWN` in place of
every unknown value, so a rule can look at everything it can see and skip what it cannot: rules fail
only on what is known to be wrong. The SDK's names are read when the first proxy is converted: the rule
modules import this one, and listing the rules must not load the SDK.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any, TypeVar


class _Unknown:
    """A value the engine does not know yet (computed during the update)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


@cache
def _sdk_unknowns() -> tuple[frozenset[str], type[Exception], tuple[type, ...]]:
    """The SDK's placeholders for values unknown during preview (UNKNOWN_STRING_VALUE, UNKNOWN_NUMBER_VALUE...),
    the error its proxies raise on reading one, and its proxy classes."""
    from pulumi_policy import proxy

    sentinels = frozenset(
        getattr(proxy, name) for name in dir(proxy) if name.startswith("UNKNOWN_") and name.endswith("_VALUE")
    )
    return sentinels, proxy.UnknownValueError, (proxy._DictProxy, proxy._ListProxy)


def is_unknown(value: Any) -> bool:
    """Whether `value` is not known yet: UNKNOWN, or one of the SDK's preview placeholders."""
    return value is UNKNOWN or (isinstance(value, str) and value in _sdk_unknowns()[0])


def plain(value: Any) -> Any:
    """Deep copy of `value` as dicts and lists, with UNKNOWN for every unknown value."""
    sentinels, unknown_error, proxies = _sdk_unknowns()
    return _plain(value, sentinels, unknown_error, proxies)


_SCALARS = (int, float, bool, type(None))
# The key at which the SDK's proxies hand over what they wrap (pulumi_policy/proxy.py, _DictProxy.__getitem__ and
# _ListProxy.__getitem__): its dict or list of proxies and plain values, the unknown placeholders left in place.
_PROXY_TARGET = "__target"


def _plain(value: Any, sentinels: frozenset[str], unknown_error: type[Exception], proxies: tuple[type, ...]) -> Any:
    kind = type(value)
    if kind in _SCALARS:  # most values of a plan: no ABC checks below (neither a Mapping nor a Sequence)
        return value
    if kind is str:
        return UNKNOWN if value in sentinels else value
    if kind in proxies:
        # Read through the proxy's target: a placeholder turns into UNKNOWN below, as reading it through the proxy
        # (which raises) would, without an exception and an ABC check for every value of every resource.
        value = value[_PROXY_TARGET]
        kind = type(value)
    if kind is dict:
        return {key: _plain(item, sentinels, unknown_error, proxies) for key, item in value.items()}
    if kind is list:
        return [_plain(item, sentinels, unknown_error, proxies) for item in value]
    if value is UNKNOWN or (isinstance(value, str) and value in sentinels):
        return UNKNOWN
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in list(iter(value)):
            try:
                out[key] = _plain(value[key], sentinels, unknown_error, proxies)
            except unknown_error:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items: list[Any] = []
        for index in range(len(value)):
            try:
                items.append(_plain(value[index], sentinels, unknown_error, proxies))
            except unknown_error:
                items.append(UNKNOWN)
        return items
    return value


T = TypeVar("T")
# Offline, one runner hands every policy the same props objects and the same resource list, and checks only read
# what they are given: within `shared_reads()` each is converted once per plan instead of once per policy (at 64
# node groups the per-policy copies were most of the policy time). The Pulumi CLI's analyzer never opens the
# block, so there every call converts afresh, as before.
_SHARED: ContextVar[dict[tuple[str, int], tuple[Any, Any]] | None] = ContextVar("shared_reads", default=None)


@contextmanager
def shared_reads() -> Iterator[None]:
    """Within this block, `once` builds each view of a given object once."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def once(kind: str, source: Any, build: Callable[[], T]) -> T:
    """`build()`; within `shared_reads()`, the value built before for this `kind` of view of this very object."""
    cache = _SHARED.get()
    if cache is None:
        return build()
    key = (kind, id(source))
    # The cache holds `source` itself, so its id cannot be reused by another object while the block lasts.
    if key not in cache:
        cache[key] = (source, build())
    return cache[key][1]  # type: ignore[no-any-return]


def get(value: Any, *path: str | int) -> Any:
    """The value at `path` in plain data: None where a step is absent, UNKNOWN where one is unknown."""
    current = value
    for key in path:
        if current is UNKNOWN:
            return UNKNOWN
        if isinstance(key, int):
            if not isinstance(current, list) or not -len(current) <= key < len(current):
                return None
            current = current[key]
        else:
            if not isinstance(current, dict):
                return None
            current = current.get(key)
    return current


def items(value: Any, *path: str | int) -> list[Any] | Any:
    """The list at `path`: [] where absent, UNKNOWN where the list itself is unknown."""
    found = get(value, *path)
    if found is UNKNOWN:
        return UNKNOWN
    if isinstance(found, list):
        return found
    return [] if found is None else [found]


def as_bool(value: Any) -> bool | None:
    """True/False for booleans and their "true"/"false" string forms; None when unknown or absent."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def as_int(value: Any) -> int | None:
    """An integer from an int, a whole float or a numeric string; None when unknown or absent."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


class JsonError(ValueError):
    """A property that must hold JSON does not parse."""


def parse_json(value: Any) -> Any:
    """Parse a JSON-string property (IAM documents, event patterns); mappings pass through.

    Returns UNKNOWN when the string is unknown and None when absent; raises JsonError when malformed.
    """
    if value is None or value is UNKNOWN:
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise JsonError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    return value


# cloud-init reads gzip-compressed user data as it reads plain (EKS nodes' user data is gzipped whole, to fit
# EC2's 16 KB); what it unpacks to is read up to this size, far above any user data a node is given.
GZIP_MAGIC = b"\x1f\x8b"
USER_DATA_READ_LIMIT = 1 << 20


def base64_text(value: Any) -> Any:
    """Base64-encoded user data as text, gzip unpacked as cloud-init unpacks it: UNKNOWN while it is unknown, ""
    when absent or not base64 (or not gzip where it says it is)."""
    if value is UNKNOWN:
        return UNKNOWN
    try:
        raw = base64.b64decode(value or "", validate=True)
        if raw.startswith(GZIP_MAGIC):
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as packed:
                raw = packed.read(USER_DATA_READ_LIMIT)
        return raw.decode("utf-8", "replace")
    except (binascii.Error, ValueError, TypeError, OSError, EOFError):
        return ""


def eks_supplies_the_image(props: Any) -> bool:
    """A launch template with neither an image nor user data: nothing can boot from it but an EKS managed node group,
    which supplies both from its amiType (EKS user guide, launch-templates: an AMI in the template needs amiType
    CUSTOM and its own bootstrap user data); a self-managed group's launch would fail for want of an image."""
    return get(props, "imageId") in (None, "") and get(props, "userData") in (None, "")
