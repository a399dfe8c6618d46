"""The libyaml reader gives exactly what the pure YAML 1.2 reader gives, and refuses the same in the same words."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SHIPPED_STACKS
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from test_depth import examples

from gpufleet import yaml_libyaml
from gpufleet.stackfile import SpecInvalid
from gpufleet.yaml_model import parse_yaml, read_yaml

pytestmark = pytest.mark.skipif(not yaml_libyaml.AVAILABLE, reason="PyYAML without libyaml 0.2.6")

SHIPPED = [
    *sorted((REPO / "gpufleet" / "catalog").rglob("*.yaml")),
    REPO / "images" / "lock.yaml",
    REPO / "policies" / "organisation.yaml",
    *sorted(SHIPPED_STACKS.glob("Pulumi.*.yaml")),
]


def both(read: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """What `read` gives through libyaml, then through the pure reader alone."""
    fast = read()
    with monkeypatch.context() as pure:
        pure.setattr(yaml_libyaml, "AVAILABLE", False)
        return fast, read()
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
def test_shipped_files_read_the_same_through_libyaml(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert yaml_libyaml.compose(path.read_text(), YAML(typ="safe", pure=True)) is not None  # libyaml reads it
    fast, pure = both(lambda: read_yaml(path), monkeypatch)
    assert fast == pure


def test_values_are_those_of_yaml_1_2(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, pure = both(lambda: parse_yaml(TRICKY, "tricky"), monkeypatch)
    assert fast == pure
    assert fast["words"][0] == "yes" and fast["ints"][0] == 4410 and fast["times"] == ["12:30", "1:20:30"]


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=20)


def outcome(text: str) -> Any:
    """What parse_yaml makes of `text`: its value, or the words it refuses it with."""
    try:
        return parse_yaml(text, "generated")
    except SpecInvalid as refused:
        return ("refused", str(refused))


@settings(max_examples=examples(150, 30), deadline=None, database=None)
@given(documents, st.sampled_from([None, True, False]))
def test_any_document_written_in_any_style_reads_the_same(document: Any, flow: bool | None) -> None:
    writer = YAML(typ="rt")
    writer.default_flow_style = flow
    sink = io.StringIO()
    writer.dump({"doc": document}, sink)
    text = sink.getvalue()
    fast = outcome(text)  # libyaml's reading, or the pure reader's where libyaml refuses the text
    yaml_libyaml.AVAILABLE = False
    try:
        assert outcome(text) == fast
    finally:
        yaml_libyaml.AVAILABLE = True


def test_text_libyaml_refuses_is_judged_by_the_pure_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    # ruamel writes a flow key starting with ':' that neither reader parses (found by the generated documents above):
    # the refusal is the pure reader's, word for word, and no traceback.
    text = "doc: {:0: null}\n"
    with pytest.raises(yaml_libyaml.yaml.YAMLError):
        yaml_libyaml.compose(text, YAML(typ="safe", pure=True))
    fast, pure = both(lambda: outcome(text), monkeypatch)
    assert fast == pure and fast[0] == "refused" and "not valid YAML" in fast[1]


def test_nesting_past_libyamls_limit_is_refused_without_a_crash(tmp_path: Path) -> None:
    # PyYAML composes in C recursion: were libyaml's nesting limit missing, this would overflow the C stack.
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 200_000 + "]" * 200_000 + "\n")
    script = ("import sys; from gpufleet.yaml_model import read_yaml; from gpufleet.stackfile import SpecInvalid\n"
              "try:\n    read_yaml(sys.argv[1])\nexcept SpecInvalid as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", script, str(deep)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nested more than 64 levels deep" in done.stdout

@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: {b: 1, b: 2}\n", "a.b: duplicate key: each key may appear once in a map"),
        ("a: " + "[" * 70 + "]" * 70 + "\n", "nested more than 64 levels deep"),
        # Past libyaml's own limit (1,000 levels), in flow and in block style: refused on libyaml's word alone.
        ("a: " + "[" * 1500 + "]" * 1500 + "\n", "nested more than 64 levels deep"),
        ("a:\n" + "".join(" " * level + "- \n" for level in range(1, 1100)), "nested more than 64 levels deep"),
        ("a: [1, 2\n", "not valid YAML"),
        ("a: !!python/name:os.system x\n", "not valid YAML"),
    ],
)
def test_libyaml_reader_refuses_what_the_pure_reader_refuses(text: str, message: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def refusal() -> str:
        with pytest.raises(SpecInvalid) as caught:
            parse_yaml(text, "bad")
        return str(caught.value)

    fast, pure = both(refusal, monkeypatch)
    assert message in fast and fast == pure
