"""policies.props.plain over the policy SDK's proxies: reading through what a proxy wraps gives what reading through
the proxy's own Mapping and Sequence interface gives, UNKNOWN wherever the proxy would raise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi_policy import proxy
from test_depth import examples

from policies.props import UNKNOWN, plain

PLACEHOLDERS = [getattr(proxy, name) for name in dir(proxy) if name.startswith("UNKNOWN_") and name.endswith("_VALUE")]
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
                   st.sampled_from(PLACEHOLDERS))
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=30)


def through_the_interface(value: Any) -> Any:
    """What a rule reading the proxy key by key and index by index sees."""
    if isinstance(value, Mapping):
        out = {}
        for key in value:
            try:
                out[key] = through_the_interface(value[key])
            except proxy.UnknownValueError:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, str):
        items = []
        for index in range(len(value)):
            try:
                items.append(through_the_interface(value[index]))
            except proxy.UnknownValueError:
                items.append(UNKNOWN)
        return items
    return UNKNOWN if value in PLACEHOLDERS else value


@settings(max_examples=examples(2000, 200), deadline=None)
@given(st.dictionaries(st.text(max_size=6), VALUES, max_size=6))
def test_plain_reads_a_proxy_as_its_interface_does(inputs: dict[str, Any]) -> None:
    proxied = proxy.unknown_checking_proxy(inputs)
    assert plain(proxied) == through_the_interface(proxied)


def test_a_placeholder_at_any_depth_is_unknown_and_plain_data_is_copied() -> None:
    inputs = {"a": [proxy.UNKNOWN_STRING_VALUE, {"b": proxy.UNKNOWN_NUMBER_VALUE, "c": 1}], "d": "x"}
    assert plain(proxy.unknown_checking_proxy(inputs)) == {"a": [UNKNOWN, {"b": UNKNOWN, "c": 1}], "d": "x"}
    copied = plain(inputs)
    assert copied == {"a": [UNKNOWN, {"b": UNKNOWN, "c": 1}], "d": "x"} and copied["a"] is not inputs["a"]
