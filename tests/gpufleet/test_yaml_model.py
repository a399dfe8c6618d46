"""The one YAML reader: YAML 1.2 as the Pulumi CLI reads it, with hostile input refused before it is built."""

from __future__ import annotations

from pathlib import Path

import pytest
from fresh_python import last_line

from gpufleet.stackfile import SpecInvalid, load_stack
from gpufleet.yaml_model import MAX_BYTES, MAX_DEPTH, read_yaml


def refused(path: Path) -> list[str]:
    with pytest.raises(SpecInvalid) as caught:
        read_yaml(path)
    return [str(error) for error in caught.value.errors]


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_yaml_1_2_keeps_yes_no_off_as_strings(tmp_path: Path) -> None:
    read = read_yaml(write(tmp_path, "a: yes\nb: off\nc: no\nd: on\n"))
    assert read == {"a": "yes", "b": "off", "c": "no", "d": "on"}


def test_duplicate_key_is_named_by_its_path(tmp_path: Path) -> None:
    text = "config:\n  gpufleet:cluster:\n    name: a\n    tags: {team: x, team: y}\n"
    assert refused(write(tmp_path, text)) == [
        "config.gpufleet:cluster.tags.team: duplicate key: each key may appear once in a map"
    ]


def test_alias_bomb_is_refused_before_expansion(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    (message,) = refused(write(tmp_path, "\n".join(lines) + "\n"))
    assert "expands to more than" in message and "aliases" in message


def test_a_shared_alias_that_stays_small_is_fine(tmp_path: Path) -> None:
    assert read_yaml(write(tmp_path, "a: &t {team: ml}\nb: *t\n")) == {"a": {"team": "ml"}, "b": {"team": "ml"}}


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    (message,) = refused(write(tmp_path, "a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"))
    assert f"nested more than {MAX_DEPTH} levels deep" in message
    (message,) = refused(write(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n"))
    assert f"nested more than {MAX_DEPTH} levels deep" in message


def test_special_huge_and_binary_files_are_refused(tmp_path: Path) -> None:
    assert refused(Path("/dev/zero")) == ["/dev/zero is not a regular file"]
    (message,) = refused(write(tmp_path, "a: " + "x" * MAX_BYTES + "\n"))
    assert f"over the {MAX_BYTES}-byte limit" in message
    (message,) = refused(write(tmp_path, b"a: \xff\xfe\n"))
    assert "is not UTF-8 text" in message


def test_stack_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid) as caught:
        load_stack(write(tmp_path, "config: {a: 1, a: 2}\n"))
    assert str(caught.value).startswith(f"invalid {tmp_path / 'Pulumi.x.yaml'}:")


@pytest.mark.parametrize(
    ("value", "kind"),
    [("2026-01-01", "a date"), ("!!binary aGVsbG8=", "binary data"), ("!!set {a: null}", "a set"),
     ("2026-01-01T10:00:00", "a date and time")],
)
def test_stack_values_that_are_not_config_values_are_refused_by_path(tmp_path: Path, value: str, kind: str) -> None:
    with pytest.raises(SpecInvalid) as caught:
        load_stack(write(tmp_path, f"config:\n  gpufleet:cluster:\n    tags: {{when: {value}}}\n"))
    assert [str(e) for e in caught.value.errors] == [
        f"config.gpufleet:cluster.tags.when: {kind} is not a stack value; quote it to keep it as text"
    ]


def test_python_tags_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid, match="not valid YAML"):
        load_stack(write(tmp_path, "config: !!python/object/apply:os.system [echo hi]\n"))


def test_a_model_builds_its_validator_when_it_first_validates_not_when_it_is_imported() -> None:
    # Issue 37: pydantic built every model's validator with its class, each parent compiling its children's again,
    # for models a command never validates (the other clouds' stack models, `quote`'s unread lock fields). In a
    # fresh interpreter: none of the data-file models (more than fifty) has a validator after the imports.
    code = (
        "import gpufleet.catalog, gpufleet.lock.model, gpufleet.stackfile.models, gpufleet.clouds.aws.stack_model\n"
        "from pydantic_core import SchemaValidator\n"
        "from gpufleet.yaml_model import StrictModel\n"
        "def every(cls): return [cls, *(m for sub in cls.__subclasses__() for m in every(sub))]\n"
        "built = lambda: [m.__name__ for m in every(StrictModel) if isinstance(m.__pydantic_validator__, "
        "SchemaValidator)]\n"
        "print(len(every(StrictModel)) > 50, built())\n"
    )
    assert last_line(code) == "True []"
