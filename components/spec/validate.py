"""Turn raw stack config into validated specs, or a SpecInvalid listing every problem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from .errors import SpecError, SpecInvalid, field_path
from .models import ImagesSpec

if TYPE_CHECKING:
    from ..lock.model import Lock

ModelT = TypeVar("ModelT", bound=BaseModel)


UNKNOWN_STACK_FIELD = "unknown field; check its spelling against `gpufleet schema`"


def _message(error: Mapping[str, Any], unknown: str) -> str:
    if error["type"] == "extra_forbidden":
        return unknown
    if error["type"] == "missing":
        return "required field is missing"
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


def images_json_schema() -> dict[str, Any]:
    """JSON Schema of `gpufleet:images`, for editors (`gpufleet schema --stack-file`)."""
    return {"title": "gpufleet:images", **TypeAdapter(ImagesSpec).json_schema()}


def validate_images(raw: Any, lock: Lock | None = None) -> ImagesSpec:
    """Validate a `gpufleet:images` value: the profile must exist in the lock."""
    spec = parse(ImagesSpec, raw)
    if lock is None:
        from ..lock import load_lock  # read only when an image stack is validated

        lock = load_lock()
    if spec.profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        message = f"unknown image profile {spec.profile!r}; images/lock.yaml has: {known}"
        raise SpecInvalid([SpecError("profile", message)])
    # An unconfirmed (null) base image plans; a real run refuses it (components.program).
    if lock.base_image_entry(spec.cloud, spec.regions[0]) is None:
        message = f"images/lock.yaml pins no base image for {spec.cloud} in {spec.regions[0]}; add base_images"
        raise SpecInvalid([SpecError("regions[0]", message)])
    return spec
