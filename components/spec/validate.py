"""Turn raw stack config into validated specs, or a SpecInvalid listing every problem."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..catalog import Catalog, load_catalog
from .errors import SpecError, SpecInvalid, field_path
from .models import ClusterSpec, ImagesSpec
from .rules import Context, LockWithImages, run_checks

ModelT = TypeVar("ModelT", bound=BaseModel)


def _message(error: dict[str, Any], model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field; check its spelling against `gpufleet schema`"
    if error["type"] == "missing":
        return "required field is missing"
    return str(error["msg"])


def parse(model: type[ModelT], raw: Any, prefix: str = "") -> ModelT:
    """Validate `raw` into `model`; pydantic's errors become SpecErrors with field paths."""
    if not isinstance(raw, dict):
        raise SpecInvalid([SpecError(prefix, "must be a map of fields (see `gpufleet schema`)")])
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        errors = [
            SpecError(field_path(prefix, tuple(e["loc"])), _message(dict(e), model, tuple(e["loc"])))
            for e in exc.errors()
        ]
        raise SpecInvalid(errors) from None


def default_lock() -> LockWithImages:
    from ..lock import load_lock  # the image lock is only read when a spec is validated

    return load_lock()


def validate_cluster(
    raw: Any, catalog: Catalog | None = None, lock: LockWithImages | None = None
) -> ClusterSpec:
    """Validate a `gpufleet:cluster` value: field types first, then cross-field checks."""
    spec = parse(ClusterSpec, raw)
    ctx = Context(catalog=catalog or load_catalog(), lock=lock or default_lock())
    errors = run_checks(spec, ctx)
    if errors:
        raise SpecInvalid(errors)
    return spec


def validate_images(raw: Any, lock: LockWithImages | None = None) -> ImagesSpec:
    """Validate a `gpufleet:images` value: the profile must exist in the lock."""
    spec = parse(ImagesSpec, raw)
    lock = lock or default_lock()
    if spec.profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        message = f"unknown image profile {spec.profile!r}; images/lock.yaml has: {known}"
        raise SpecInvalid([SpecError("profile", message)])
    if lock.base_image(spec.cloud, spec.regions[0]) is None:
        message = f"images/lock.yaml pins no base image for {spec.cloud} in {spec.regions[0]}; add base_images"
        raise SpecInvalid([SpecError("regions[0]", message)])
    return spec
