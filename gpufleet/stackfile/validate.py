"""Turn raw stack config into validated specs, or a SpecInvalid listing every problem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from .errors import SpecError, SpecInvalid, field_path
from .pattern_words import pattern_in_words

ModelT = TypeVar("ModelT", bound=BaseModel)


UNKNOWN_STACK_FIELD = "unknown field; check its spelling against `gpufleet schema`"


def _message(error: Mapping[str, Any], unknown: str) -> str:
    if error["type"] == "extra_forbidden":
        return unknown
    if error["type"] == "missing":
        return "required field is missing"
    if error["type"] == "bool_type":
        return "must be true or false"
    if error["type"] == "string_pattern_mismatch":
        return pattern_in_words(str(error["ctx"]["pattern"]))
    return str(error["msg"])


def _errors(exc: ValidationError, prefix: str, tags: Sequence[str], unknown: str) -> list[SpecError]:
    """pydantic's errors as SpecErrors with field paths; a discriminated union's tag is not a field."""
    found = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            reason = "required field is missing" if error["type"] == "union_tag_not_found" else "unknown value"
            found.append(SpecError(field_path(prefix, ("cloud",)), f"{reason}; use one of: {', '.join(tags)}"))
            continue
        if loc and loc[0] in tags:
            loc = loc[1:]
        # A nested union's branch tag written <like this> (gpufleet.lock.model: one entry or one per boot mode).
        loc = tuple(part for part in loc if not (isinstance(part, str) and part.startswith("<") and part.endswith(">")))
        found.append(SpecError(field_path(prefix, loc), _message(error, unknown)))
    return found


def parse_with(
    adapter: TypeAdapter[Any], raw: Any, tags: Sequence[str] = (), prefix: str = "", unknown: str = UNKNOWN_STACK_FIELD
) -> Any:
    """Validate `raw` with a TypeAdapter (a discriminated union tagged by `tags`); SpecInvalid on errors.

    `unknown` is the message for a field the model does not have (stack files point at `gpufleet schema`).
    """
    if not isinstance(raw, dict):
        raise SpecInvalid([SpecError(prefix, "must be a map of fields")])
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        raise SpecInvalid(_errors(exc, prefix, tags, unknown)) from None


def parse(model: type[ModelT], raw: Any, prefix: str = "", unknown: str = UNKNOWN_STACK_FIELD) -> ModelT:
    """Validate `raw` into `model`; pydantic's errors become SpecErrors with field paths."""
    return parse_with(TypeAdapter(model), raw, prefix=prefix, unknown=unknown)


def discriminated_union(models: Sequence[type[BaseModel]]) -> TypeAdapter[Any]:
    """One model per cloud, chosen by the value of its `cloud` field."""
    return TypeAdapter(Annotated[Union[tuple(models)], Field(discriminator="cloud")])  # noqa: UP007 - a runtime tuple
