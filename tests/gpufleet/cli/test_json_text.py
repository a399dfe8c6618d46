"""The CLI's JSON writer: the bytes json.dumps(indent=2, sort_keys=True) writes, for any JSON value."""

from __future__ import annotations

import enum
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.cli.json_text import indented_json

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def standard(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=True)


@given(VALUES)
def test_any_json_value_is_written_as_the_standard_library_writes_it(data: object) -> None:
    assert indented_json(data) == standard(data)


class Level(str, enum.Enum):
    advisory = "advisory"


class Count(enum.IntEnum):
    two = 2


@pytest.mark.parametrize("data", [
    {}, [], "", {"a": {}, "b": [], "c": [{}]}, ("tuple", 1),
    {"é": "naïve — ✓", "\x00": "\u2028"},  # escaped as \\uXXXX (ensure_ascii)
    {2: "int keys", 10: "sorted as numbers"}, {2.5: "float key", math.inf: "infinite key"}, {False: "bool key"},
    {None: "null key"},
    [math.nan, math.inf, -math.inf, 1e-7, 1e22, -0.0, 2**70],
    {"level": Level.advisory, "count": Count.two},
])
def test_edge_values_match_the_standard_library(data: object) -> None:
    assert indented_json(data) == standard(data)


@pytest.mark.parametrize("data", [{1: 1, "a": 2}, {(1,): 1}, [object()]])
def test_what_json_refuses_is_refused(data: object) -> None:
    with pytest.raises(TypeError):
        standard(data)
    with pytest.raises(TypeError):
        indented_json(data)
