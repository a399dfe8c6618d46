"""The one way data files become typed models: YAML 1.2 as the Pulumi CLI reads it, then a strict pydantic model.

The catalog, the image lock and the stack files all go through `read_yaml` (duplicate keys refused; `yes`,
`no`, `off` stay strings) and `load_yaml_model`, so every file reports problems the same way: every error,
with its field path, as SpecInvalid (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

ModelT = TypeVar("ModelT", bound=BaseModel)


class StrictModel(BaseModel):
    """Unknown fields are errors and values are immutable once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def read_yaml(path: Path) -> Any:
    """One YAML 1.2 document; an unreadable file or bad YAML is a SpecInvalid naming the file."""
    from .spec.errors import SpecError, SpecInvalid

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecInvalid([SpecError("", f"cannot read {path}: {exc}")], str(path)) from None
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise SpecInvalid([SpecError("", f"{path} is not valid YAML: {exc}")], str(path)) from None


def load_yaml_model(path: Path, model: type[ModelT]) -> ModelT:
    """Read `path` and validate it into `model`; SpecInvalid lists every problem by field path."""
    from .spec.errors import SpecInvalid
    from .spec.validate import parse

    try:
        return parse(model, read_yaml(path), unknown="unknown field; check its spelling")
    except SpecInvalid as invalid:
        raise SpecInvalid(invalid.errors, str(path)) from None
