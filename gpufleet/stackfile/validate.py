"""Turn raw stack config into validated specs, or a SpecInvalid listing every problem."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Annotated, Any, TypeVar, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from .errors import SpecError, SpecInvalid, field_path
from .pattern_words import IPV4_NETWORK_PATTERN, pattern_in_words

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
    # pydantic prefixes a validator's own message with the exception's kind; the message is the user's.
    return str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _fields_at(schema: dict[str, Any], loc: Sequence[Any]) -> list[str]:
    """The field names the JSON Schema `schema` allows at `loc` (pydantic's error location: a union's tag, field
    names, list indexes); [] where the walk cannot tell."""
    defs = schema.get("$defs", {})

    def plain(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node or ("anyOf" in node and "properties" not in node):
            if "$ref" in node:
                node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
            else:  # an optional field (X | None): the branch that has fields or items
                node = next((n for n in node["anyOf"] if n.get("type") != "null"), {})
        return node

    node = plain(schema)
    for part in loc:
        mapping = node.get("discriminator", {}).get("mapping", {})
        if isinstance(part, str) and part in mapping:
            node = plain({"$ref": mapping[part]})
        elif isinstance(part, int):
            node = plain(node.get("items", {}))
        elif part in node.get("properties", {}):
            node = plain(node["properties"][part])
        else:
            return []
    return list(node.get("properties", {}))


def _unknown(adapter: TypeAdapter[Any], loc: tuple[Any, ...], unknown: str) -> str:
    """The unknown-field message, with the closest field the model has there."""
    try:
        fields = _fields_at(adapter.json_schema(), loc[:-1])
    except Exception:  # a schema pydantic cannot write (a callable default): the message without a suggestion
        fields = []
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1) if loc else []
    return f"{unknown}; did you mean {close[0]!r}?" if close else unknown


def _errors(exc: ValidationError, prefix: str, tags: Sequence[str], unknown: str,
            adapter: TypeAdapter[Any] | None = None) -> list[SpecError]:
    """pydantic's errors as SpecErrors with field paths; a discriminated union's tag is not a field."""
    found = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and adapter is not None:
            found.append(SpecError(field_path(prefix, _without_tags(loc, tags)), _unknown(adapter, loc, unknown)))
            continue
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            reason = "required field is missing" if error["type"] == "union_tag_not_found" else "unknown value"
            found.append(SpecError(field_path(prefix, ("cloud",)), f"{reason}; use one of: {', '.join(tags)}"))
            continue
        found.append(SpecError(field_path(prefix, _without_tags(loc, tags)), _message(error, unknown)))
    return found


def _without_tags(loc: tuple[Any, ...], tags: Sequence[str]) -> tuple[Any, ...]:
    if loc and loc[0] in tags:
        loc = loc[1:]
    # A nested union's branch tag written <like this> (gpufleet.lock.model: one entry or one per boot mode).
    return tuple(part for part in loc if not (isinstance(part, str) and part.startswith("<") and part.endswith(">")))


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
        raise SpecInvalid(_errors(exc, prefix, tags, unknown, adapter)) from None


def parse(model: type[ModelT], raw: Any, prefix: str = "", unknown: str = UNKNOWN_STACK_FIELD) -> ModelT:
    """Validate `raw` into `model`; pydantic's errors become SpecErrors with field paths."""
    return parse_with(_adapter(model), raw, prefix=prefix, unknown=unknown)


def discriminated_union(models: Sequence[type[BaseModel]]) -> TypeAdapter[Any]:
    """One model per cloud, chosen by the value of its `cloud` field."""
    return TypeAdapter(Annotated[Union[tuple(models)], Field(discriminator="cloud")])  # noqa: UP007 - a runtime tuple


def parse_by_cloud(union: Callable[[], TypeAdapter[Any]], branch: Callable[[str], type[BaseModel]], raw: Any,
                 tags: Sequence[str], unknown: str = UNKNOWN_STACK_FIELD) -> Any:
    """Validate `raw` as the discriminated union `union` of one model per tag would (parse_with), with only the
    branch its `cloud` names built: the union picks that branch alone, so its errors are the same, and building
    the other clouds' models (pydantic makes a model's validator with its class) is left out. A missing or unknown
    tag goes to the union, which words that error."""
    tag = raw.get("cloud") if isinstance(raw, dict) else None
    if isinstance(tag, str) and tag in tags:
        return parse_with(_adapter(branch(tag)), raw, unknown=unknown)
    return parse_with(union(), raw, tags, unknown=unknown)


@cache
def _adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    """One adapter per model and process: a model builds its validator when first used (yaml_model.StrictModel),
    and an adapter made anew would build it again."""
    return TypeAdapter(model)


def with_network_patterns(node: Any) -> Any:
    """`node` (a JSON Schema) with a pattern beside every `format: ipv4network`: validators ignore a format they do
    not know, as they do pydantic's."""
    if isinstance(node, list):
        return [with_network_patterns(item) for item in node]
    if not isinstance(node, dict):
        return node
    found = {key: with_network_patterns(value) for key, value in node.items()}
    if found.get("format") == "ipv4network":
        found["pattern"] = IPV4_NETWORK_PATTERN
    return found


def branches_by_tag(schema: dict[str, Any], title: str) -> dict[str, Any]:
    """A discriminated union's JSON Schema (pydantic's `oneOf` + OpenAPI `discriminator`, which JSON Schema
    validators ignore, so every branch's errors are reported) as if/then on the tag: the tag's own branch applies. A
    document without the tag (an extending stack file inherits it) is checked against the branches that have its
    fields. Network values get their pattern too (with_network_patterns)."""
    tag, mapping = schema["discriminator"]["propertyName"], schema["discriminator"]["mapping"]
    return with_network_patterns({
        "title": title,
        "type": "object",
        "required": [tag],
        "properties": {tag: {"enum": list(mapping), "description": f"the {tag}: picks the branch that applies"}},
        "allOf": [
            *({"if": {"required": [tag], "properties": {tag: {"const": value}}}, "then": {"$ref": ref}}
              for value, ref in mapping.items()),
            {"if": {"not": {"required": [tag]}}, "then": {"anyOf": [{"$ref": ref} for ref in mapping.values()]}},
        ],
        "$defs": schema["$defs"],
    })
