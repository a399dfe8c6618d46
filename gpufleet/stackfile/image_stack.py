"""Validate a `gpufleet:images` value: the cloud's model (a discriminated union on `cloud`, built from the
registered backends), then its values against the cloud's naming, the catalog and the image lock.

The provider's region key (aws:region...) is checked against regions[0] with the cluster's `region` in
gpufleet.prepare.prepare.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from ..clouds.lookup import backend
from ..clouds.registry import CLOUDS
from ..lock.image_ids import is_valid_region
from .checks import regions_of_the_cloud, retention_problem, tags_within_limits
from .errors import SpecError, SpecInvalid
from .left_out import findings_despite
from .models import ImagesSpec
from .validate import branches_by_tag, discriminated_union, parse_by_cloud

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ..catalog import Catalog
    from ..lock.model import Lock

UNKNOWN_IMAGES_FIELD = "unknown field; check its spelling against `gpufleet schema --images`"


@cache
def _images_adapter() -> TypeAdapter[Any]:
    return discriminated_union([backend(cloud).images_model for cloud in CLOUDS])


def _images_model(cloud: str) -> type[ImagesSpec]:
    return backend(cloud).images_model


def images_json_schema() -> dict[str, Any]:
    """JSON Schema of `gpufleet:images`: one branch per cloud, chosen by `cloud` (validate.branches_by_tag)."""
    return branches_by_tag(_images_adapter().json_schema(), "gpufleet:images")


def _profile_covers_the_regions(spec: ImagesSpec, lock: Lock) -> Iterator[SpecError]:
    """`images pin` writes only regions the profile lists, and the build starts from the lock's base image."""
    profile = lock.profiles.get(spec.profile)
    if profile is None:
        known = ", ".join(sorted(lock.profiles))
        yield SpecError("profile", f"unknown image profile {spec.profile!r}; images/lock.yaml has: {known}")
        return
    if not profile.baked:
        baked = ", ".join(sorted(name for name, entry in lock.profiles.items() if entry.baked))
        yield SpecError("profile", f"profile {spec.profile!r} is installed_by: ack: ACK installs its driver on "
                                   "ACK's own node image, so there is nothing to bake; name a profile gpufleet bakes: "
                                   f"{baked}")
        return
    listed = profile.images.get(spec.cloud, {})
    for i, region in enumerate(spec.regions):
        if is_valid_region(spec.cloud, region) and region not in listed:
            yield SpecError(
                f"regions[{i}]",
                f"profile {spec.profile!r} has no {spec.cloud} entry for {region} in images/lock.yaml, so its image "
                f"could not be pinned; add `{region}: {{id: null, status: unbaked}}` under "
                f"profiles.{spec.profile}.images.{spec.cloud} first",
            )
    # An unconfirmed (null) base image plans; a real run refuses it (gpufleet.program).
    build = spec.regions[0]
    if is_valid_region(spec.cloud, build) and lock.base_image_entry(spec.cloud, build) is None:
        message = f"images/lock.yaml pins no base image for {spec.cloud} in {build}; add base_images"
        yield SpecError("regions[0]", message)
        return
    # A bake per boot mode the profile keeps an image for, each from a base image of that boot mode.
    for mode in profile.image_entries(spec.cloud, build):
        if mode is not None and lock.base_image_entry(spec.cloud, build, mode) is None:
            yield SpecError("regions[0]", f"profile {spec.profile!r} keeps a {mode} image in {build} but "
                            f"images/lock.yaml has no {mode} base image there to bake it from; add "
                            f"base_images.{spec.cloud}.{build}.{mode}")


def _build_types_known(spec: ImagesSpec, catalog: Catalog) -> Iterator[SpecError]:
    known = catalog.build_type_names(spec.cloud)
    for field, name in spec.build_types():
        if name not in known:
            yield SpecError(
                field,
                f"unknown build type {name!r} for {spec.cloud}; use one of: {', '.join(known[:12])} "
                f"(build_types and instances in gpufleet/catalog/data/{spec.cloud}.yaml)",
            )


def _build_log_retention_kept(spec: ImagesSpec, catalog: Catalog) -> Iterator[SpecError]:
    """An image stack's created build network keeps its flow logs network.log_retention_days (AWS)."""
    days = getattr(getattr(spec, "network", None), "log_retention_days", None)
    if days is not None and (problem := retention_problem(catalog.limits(spec.cloud), spec.cloud, days)):
        yield SpecError("network.log_retention_days", problem)


def validate_images(raw: Any, lock: Lock | None = None, catalog: Catalog | None = None) -> ImagesSpec:
    """Validate a `gpufleet:images` value; SpecInvalid lists every problem, by field."""
    try:
        spec: ImagesSpec = parse_by_cloud(_images_adapter, _images_model, raw, CLOUDS, UNKNOWN_IMAGES_FIELD)
    except SpecInvalid as invalid:
        rest = findings_despite(raw, invalid.errors, lambda trimmed: validate_images(trimmed, lock, catalog))
        raise SpecInvalid([*invalid.errors, *rest]) from None
    if lock is None:
        from ..lock import load_lock  # read only when an image stack is validated

        lock = load_lock()
    if catalog is None:
        from ..catalog import load_catalog

        catalog = load_catalog()
    errors = [
        *regions_of_the_cloud(spec.cloud, ((f"regions[{i}]", region) for i, region in enumerate(spec.regions))),
        *_profile_covers_the_regions(spec, lock),
        *_build_types_known(spec, catalog),
        *_build_log_retention_kept(spec, catalog),
        *tags_within_limits(catalog.limits(spec.cloud), spec.cloud, spec.tags),
    ]
    if errors:
        raise SpecInvalid(errors)
    return spec
