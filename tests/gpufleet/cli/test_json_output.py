"""`--format json` text (gpufleet/cli/json_output.py): the bytes json.dumps(indent=2, sort_keys=True) writes, from
orjson, with json for what orjson refuses."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_depth import examples

from gpufleet.cli.json_output import json_text


def as_json_writes(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


# Everything a plan, report or schema holds: text of any plane (non-ASCII, escapes, astral), 64-bit integers, floats
# in the range json writes without a two-digit exponent, nesting with empty maps and lists.
LEAVES = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text()
          | st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: number == 0 or abs(number) >= 1e-4))
DOCUMENTS = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                                             max_size=4),
                         max_leaves=40)


@settings(max_examples=examples(3000, 300), deadline=None)
@given(DOCUMENTS)
def test_any_document_reads_byte_for_byte_as_json_writes_it(document: Any) -> None:
    assert json_text(document) == as_json_writes(document)


def test_shipped_plans_read_as_json_writes_them(shipped_plans: dict[str, Any]) -> None:
    for name, plan in shipped_plans.items():
        document = plan.to_json()
        assert json_text(document) == as_json_writes(document), name


@pytest.mark.parametrize("document", [
    {1: "keys that are no strings", 2: "sorted as numbers"},
    {"lone": "\ud800 surrogate"},
    {"big": 2**70},
    {"é": ["ünïcode", "🚀", "\u2028"], "\x00": "\x1f"},
], ids=["int-key", "lone-surrogate", "big-int", "non-ascii"])
def test_what_orjson_refuses_or_writes_otherwise_is_written_as_json_writes_it(document: Any) -> None:
    assert json_text(document) == as_json_writes(document)
    assert json_text(document).isascii()


@dataclasses.dataclass
class Row:
    name: str


@pytest.mark.parametrize("value", [datetime.datetime(2026, 11, 29), Row("x"), {1, 2}])
def test_what_json_refuses_is_refused_as_json_refuses_it(value: Any) -> None:
    with pytest.raises(TypeError, match="is not JSON serializable"):
        json_text({"value": value})
