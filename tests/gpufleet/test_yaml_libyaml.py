"""The libyaml reader of shipped files gives exactly what the pure YAML 1.2 reader gives, and refuses the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from gpufleet import yaml_libyaml
from gpufleet.stackfile import SpecInvalid
from gpufleet.yaml_model import parse_yaml, read_yaml

pytestmark = pytest.mark.skipif(not yaml_libyaml.AVAILABLE, reason="PyYAML built without libyaml")

SHIPPED = [
    *sorted((REPO / "components" / "catalog" / "data").glob("*.yaml")),
    REPO / "images" / "lock.yaml",
    REPO / "policies" / "organisation.yaml",
]
# Scalars whose YAML 1.1 and 1.2 readings differ, tags, flow and block styles, a shared alias.
TRICKY = """
words: [yes, no, on, off, y, n, Yes, OFF]
ints: [04410, 0o17, 0x1F, 1_000, -0, +7, 0b101]
floats: [1e3, .5, -.5, 1., .inf, -.Inf, .nan, 1_0.5]
times: [12:30, 1:20:30]
nulls: [~, null, Null, ]
bools: [true, False, TRUE]
strings: ['5', "yes", !!str 7, plain text, "multi\\nline"]
date: 2026-01-01
block: |
  kept
  as is
folded: >
  one
  line
shared: &s {a: 1, b: [x, y]}
again: *s
"""


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_files_read_the_same_through_libyaml(path: Path) -> None:
    assert read_yaml(path, trusted=True) == read_yaml(path)


def test_values_are_those_of_yaml_1_2() -> None:
    fast = parse_yaml(TRICKY, "tricky", trusted=True)
    assert fast == parse_yaml(TRICKY, "tricky")
    assert fast["words"][0] == "yes" and fast["ints"][0] == 4410 and fast["times"] == ["12:30", "1:20:30"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: {b: 1, b: 2}\n", "a.b: duplicate key: each key may appear once in a map"),
        ("a: " + "[" * 70 + "]" * 70 + "\n", "nested more than 64 levels deep"),
        ("a: [1, 2\n", "not valid YAML"),
        ("a: !!python/name:os.system x\n", "not valid YAML"),
    ],
)
def test_libyaml_reader_refuses_what_the_pure_reader_refuses(text: str, message: str) -> None:
    for trusted in (True, False):
        with pytest.raises(SpecInvalid) as caught:
            parse_yaml(text, "bad", trusted=trusted)
        assert message in str(caught.value), (trusted, str(caught.value))
