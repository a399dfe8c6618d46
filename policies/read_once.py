"""Under the Pulumi CLI, a stack call reads each resource's properties once instead of once per stack rule.

pulumi_policy's AnalyzeStack (pulumi_policy/policy.py) builds every resource anew for each stack rule it calls:
`unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(r.properties)))`. For 38 stack rules and
a Kubernetes stack's CRDs that was ~4 CPU-s per preview. The three names it reads from its module are replaced
here: while `reading_once()` holds on a thread, each message's dict, each dict's deserialized form and each form's
proxy are made once; elsewhere they are the SDK's own. Every rule then gets the same proxy of a resource, as the
offline runner gives them (plan/policy_runner.py: rules only read them), and within props.shared_reads() the plain
views the rules take of a proxy are built once too.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pulumi_policy import policy as sdk

# The SDK's own objects, also where this module was loaded before under another name and replaced them already.
json_format = getattr(sdk.json_format, "sdk_module", sdk.json_format)  # google.protobuf's, as the SDK imports it

# Per thread, while reading_once() holds: message bytes -> dict; (kind, id of the object) -> (object, result).
_made = threading.local()


class _JsonFormat:
    """What pulumi_policy.policy reads as google.protobuf.json_format."""

    sdk_module = json_format

    def __getattr__(self, name: str) -> Any:
        return getattr(json_format, name)

    @staticmethod
    def MessageToDict(message: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 (json_format's name)
        dicts = getattr(_made, "dicts", None)
        if dicts is None or args or kwargs:
            return json_format.MessageToDict(message, *args, **kwargs)
        key = message.SerializeToString(deterministic=True)  # equal bytes, equal dict; safe whatever the wrapper
        if key not in dicts:
            dicts[key] = json_format.MessageToDict(message)
        return dicts[key]


def _once_per_object(function: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """`function` of one object, answered once per object while reading_once() holds on this thread."""

    @functools.wraps(function)
    def answered_once(value: Any, *args: Any, **kwargs: Any) -> Any:
        results = getattr(_made, "results", None)
        if results is None or args or kwargs:
            return function(value, *args, **kwargs)
        key = (kind, id(value))
        if key not in results:
            results[key] = (value, function(value))  # the object held, so its id is not reused meanwhile
        return results[key][1]

    return answered_once


@contextmanager
def reading_once() -> Iterator[None]:
    """Within: the SDK's calls on this thread read each resource's properties once."""
    _made.dicts, _made.results = {}, {}
    try:
        yield
    finally:
        _made.dicts = _made.results = None


sdk.json_format = _JsonFormat()  # type: ignore[assignment]
for _name, _kind in (("deserialize_properties", "deserialized"), ("unknown_checking_proxy", "proxied")):
    _own = getattr(sdk, _name)
    setattr(sdk, _name, _once_per_object(getattr(_own, "__wrapped__", _own), _kind))
