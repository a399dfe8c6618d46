"""The one way data files become typed models: YAML 1.2 as the Pulumi CLI reads it, then a strict pydantic model.

The catalog, the image lock and the stack files all go through `read_yaml` (duplicate keys refused; `yes`,
`no`, `off` stay strings) and `load_yaml_model`, so every file reports problems the same way: every error,
with its field path, as SpecInvalid (exit 2). Text is scanned by libyaml where it is installed
(gpufleet/yaml_libyaml.py), then checked and built by ruamel's YAML 1.2 rules; text libyaml refuses goes to the pure
reader, whose words every error uses.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml import YAMLError as LibyamlError

from . import derived_cache, yaml_libyaml

if TYPE_CHECKING:
    from .stackfile.errors import SpecInvalid

ModelT = TypeVar("ModelT", bound=BaseModel)
T = TypeVar("T")


NOT_A_BOOLEAN = object()


class StrictModel(BaseModel):
    """Unknown fields are errors, a yes/no field takes only true or false, and values are immutable once validated."""

    # defer_build: a model's validator is built when it first validates, not with its class (where each parent
    # compiled its children's again): a command builds only the models it reads.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _booleans_are_true_or_false(cls, data: Any) -> Any:
        # pydantic's lax mode reads 0, 1, "on", "off" and "no" as booleans: in a file that is a typo or a number in
        # the wrong field, not a yes/no (`nvswitch: 0`). Such a value is handed on as one no mode reads as a
        # boolean, so pydantic reports it at the field's own path (bool_type).
        if isinstance(data, dict):
            takes_bool = cls._bool_fields()
            return {key: NOT_A_BOOLEAN if key in takes_bool and value is not None and not isinstance(value, bool)
                    else value for key, value in data.items()}
        return data

    @classmethod
    def _bool_fields(cls) -> set[str]:
        return {name for name, field in cls.model_fields.items() if field.annotation in (bool, bool | None)}


# Data files are small: a stack file is a few KiB, the catalog and the lock tens. The caps refuse hostile
# input (a device, a huge file, an alias bomb, deep nesting) in well under a second.
MAX_BYTES = 1 << 20
MAX_NODES = 200_000
MAX_DEPTH = 64


def _refuse(source: str, message: str, path: str = "") -> SpecInvalid:
    from .stackfile.errors import SpecError, SpecInvalid

    return SpecInvalid([SpecError(path, message)], source)


def read_yaml(path: Path) -> Any:
    """One YAML 1.2 document from a regular file of at most MAX_BYTES; SpecInvalid naming the file otherwise."""
    return parse_yaml(_read_text(path), str(path))


def compose_yaml(path: Path) -> Node | None:
    """The checked node tree of a YAML file, read like `read_yaml`: nodes keep their line numbers."""
    text, source = _read_text(path), str(path)
    return _read(text, source, _compose)


def _read_text(path: Path) -> str:
    source = str(path)
    try:
        info = Path(path).stat()
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(source, f"{path} is not a regular file")
        if info.st_size > MAX_BYTES:
            raise _refuse(source, f"{path} is {info.st_size} bytes, over the {MAX_BYTES}-byte limit")
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _refuse(source, f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise _refuse(source, f"{path} is over the {MAX_BYTES}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(source, f"{path} is not UTF-8 text (byte {exc.start})") from None


class _LibyamlRefused(Exception):
    """libyaml could not read the text: the pure reader reads it again and, where it fails too, says why."""


@contextmanager
def _yaml_errors(source: str, fast: bool) -> Iterator[None]:
    try:
        yield
    except (YAMLError, LibyamlError, RecursionError, ValueError) as exc:
        # ValueError: a scalar the constructor cannot build, e.g. the date 2027-02-30
        nested = isinstance(exc, RecursionError) or getattr(exc, "problem", None) == yaml_libyaml.NESTING_LIMIT_PROBLEM
        if fast and not nested:
            raise _LibyamlRefused from exc
        if nested:  # libyaml stops at 1,000 levels, far past MAX_DEPTH: the pure reader would refuse it the same
            raise _refuse(source, f"nested more than {MAX_DEPTH} levels deep") from None
        # The pure reader names the text it was given "<unicode string>": the file is what the user opens.
        raise _refuse(source, f"not valid YAML: {str(exc).replace('<unicode string>', source)}") from None


def _read(text: str, source: str, step: Callable[[str, str, bool], T]) -> T:
    """`step` through libyaml where it is installed; through the pure reader where it is not or where libyaml, a
    YAML 1.1 parser that marks errors its own way, refused the text: every error is worded by the pure reader."""
    if yaml_libyaml.AVAILABLE:
        try:
            return step(text, source, True)
        except _LibyamlRefused:
            pass
    return step(text, source, False)


def _compose(text: str, source: str, fast: bool, reader: YAML | None = None) -> Node | None:
    reader = reader or YAML(typ="safe", pure=True)
    with _yaml_errors(source, fast):
        node = yaml_libyaml.compose(text, reader) if fast else reader.compose(text)
    if node is not None:
        _check_tree(node, source)
    return node


def _construct(text: str, source: str, fast: bool) -> Any:
    reader = YAML(typ="safe", pure=True)
    node = _compose(text, source, fast, reader)
    if node is None:
        return None
    with _yaml_errors(source, fast):
        return reader.constructor.construct_document(node)


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML 1.2 text as the Pulumi CLI reads it: duplicate keys refused by path, aliases and nesting
    bounded before anything is built from them."""
    return _read(text, source, _construct)


def _check_tree(root: Node, source: str) -> None:
    """Duplicate mapping keys (by field path), nesting deeper than MAX_DEPTH, and documents whose aliases
    expand past MAX_NODES values: refused, never expanded."""
    expanded: dict[int, int] = {}

    def visit(node: Node, path: str, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _refuse(source, f"nested more than {MAX_DEPTH} levels deep", path)
        if id(node) in expanded:  # an alias: counted again in full, walked once
            return expanded[id(node)]
        size = 1
        if isinstance(node, MappingNode):
            seen: set[object] = set()
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else f"<{key.tag}>"
                where = f"{path}.{name}" if path else str(name)
                if name in seen:
                    raise _refuse(source, "duplicate key: each key may appear once in a map", where)
                seen.add(name)
                size += visit(value, where, depth + 1)
        elif isinstance(node, SequenceNode):
            size += sum(visit(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node.value))
        expanded[id(node)] = size
        if size > MAX_NODES:
            raise _refuse(source, f"expands to more than {MAX_NODES} values (aliases?); write it out plainly", path)
        return size

    visit(root, "", 0)


def load_yaml_model(path: Path, model: type[ModelT]) -> ModelT:
    """Read `path` and validate it into `model`; SpecInvalid lists every problem by field path. A file that validated
    before, with the same bytes and code, is read back from the cache (derived_cache.py)."""
    from .stackfile.errors import SpecInvalid
    from .stackfile.validate import parse

    text = _read_text(path)

    def build() -> ModelT:
        try:
            return parse(model, parse_yaml(text, str(path)), unknown="unknown field; check its spelling")
        except SpecInvalid as invalid:
            raise SpecInvalid(invalid.errors, str(path)) from None

    return derived_cache.kept(f"{model.__module__}.{model.__qualname__}", text.encode(), build)
