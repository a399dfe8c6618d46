"""Checks over a loaded lock: every rule `gpufleet images check` enforces, each with a precise message."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from .image_ids import EXPECTED_PARENT_SHAPE, EXPECTED_SHAPE, is_valid_image_id, is_valid_parent_image
from .model import Lock, Profile
from .versions import cuda_minor, driver_branch, version_key


@dataclass(frozen=True)
class LockProblem:
    profile: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.profile}: {self.field}: {self.message}"


def _versions(profile: Profile) -> dict[str, str]:
    """Every pinned version and image id of a profile, by field path."""
    found = {
        "driver": profile.driver,
        "fabric_manager": profile.fabric_manager,
        "cuda": profile.cuda,
        "nccl": profile.nccl,
        "dcgm": profile.dcgm,
        "driver_pinning_package": profile.driver_pinning_package,
        "nodecheck.nvidia_ml_py": profile.nodecheck.nvidia_ml_py,
    }
    found.update({f"apt.{pkg}": version for pkg, version in profile.apt.items()})
    for cloud, components in profile.fabric.items():
        for name, component in components.items():
            found[f"fabric.{cloud}.{name}.version"] = component.version
            if component.url:
                found[f"fabric.{cloud}.{name}.url"] = component.url
    for cloud, regions in profile.images.items():
        found.update({f"images.{cloud}.{region}": e.id for region, e in regions.items() if e.id is not None})
    return found


def _check_latest(profile: Profile) -> list[LockProblem]:
    return [
        LockProblem(profile.name, field, f"'{value}' says 'latest': pin an exact version")
        for field, value in _versions(profile).items()
        if "latest" in value.lower()
    ]


def _check_numeric(profile: Profile) -> list[LockProblem]:
    problems = []
    for field in ("driver", "fabric_manager", "cuda"):
        value = getattr(profile, field)
        try:
            version_key(value)
        except ValueError:
            problems.append(LockProblem(profile.name, field, f"'{value}' is not a dotted numeric version"))
    return problems


def _check_driver(lock: Lock, profile: Profile, on: date) -> list[LockProblem]:
    name, driver = profile.name, profile.driver
    problems = []
    if profile.fabric_manager != driver:
        problems.append(LockProblem(
            name, "fabric_manager",
            f"fabric manager {profile.fabric_manager} differs from driver {driver}: "
            "it must equal the driver exactly or it refuses to start",
        ))
    minor = cuda_minor(profile.cuda)
    minimum = lock.cuda_minimum_driver.versions.get(minor)
    if minimum is None:
        problems.append(LockProblem(name, "cuda", f"no minimum driver recorded for CUDA {minor}"))
    elif version_key(driver) < version_key(minimum):
        problems.append(LockProblem(
            name, "driver", f"driver {driver} is below the minimum {minimum} for CUDA {minor}",
        ))
    branch_name = driver_branch(driver)
    branch = lock.driver_branches.branches.get(branch_name)
    if branch is None:
        problems.append(LockProblem(
            name, "driver", f"driver {driver} is on unknown branch {branch_name.upper()} (not in driver_branches)",
        ))
    elif not branch.supported:
        problems.append(LockProblem(
            name, "driver", f"driver {driver} is on branch {branch_name.upper()}, out of the support matrix",
        ))
    elif branch.eol is not None and on > branch.eol:
        problems.append(LockProblem(
            name, "driver",
            f"driver branch {branch_name.upper()} reached end of life on {branch.eol.isoformat()} "
            f"(checked for {on.isoformat()})",
        ))
    return problems


def _check_images(profile: Profile, required_regions: dict[str, set[str]]) -> list[LockProblem]:
    problems = []
    for cloud, regions in sorted(profile.images.items()):
        for region, entry in sorted(regions.items()):
            # An unbaked entry (id null, status unbaked) is sound: plans show it, deploys refuse it.
            image = entry.id
            if image is not None and "latest" not in image.lower() and not is_valid_image_id(cloud, image):
                problems.append(LockProblem(
                    profile.name, f"images.{cloud}.{region}",
                    f"'{image}' is not a valid {cloud} image id: expected {EXPECTED_SHAPE[cloud]}",
                ))
    for cloud, regions in sorted(required_regions.items()):
        for region in sorted(set(regions) - set(profile.images.get(cloud, {}))):
            problems.append(LockProblem(
                profile.name, f"images.{cloud}.{region}", f"no image for required region {cloud}/{region}",
            ))
    return problems


def _check_base_images(lock: Lock) -> list[LockProblem]:
    return [
        LockProblem("base_images", f"base_images.{cloud}.{region}.parent_image",
                    f"'{base.parent_image}' is not a pinnable {cloud} parent image: expected "
                    f"{EXPECTED_PARENT_SHAPE.get(cloud, 'a cloud with an image pipeline (aws)')}")
        for cloud, regions in sorted(lock.base_images.items())
        for region, base in sorted(regions.items())
        # An unconfirmed (null) base is not a problem of the lock, as an unbaked image is not: `pulumi up` refuses it.
        if base.parent_image is not None
        and ("latest" in base.parent_image.lower() or not is_valid_parent_image(cloud, base.parent_image))
    ]


def check_lock(
    lock: Lock,
    on: date,
    required_regions: dict[str, set[str]] | None = None,
    profile: str | None = None,
) -> list[LockProblem]:
    """Every problem in the lock (or in one profile of it) as of date `on`; empty when the lock is sound.

    required_regions defaults to the lock's own `required_regions`.
    """
    regions = (
        required_regions if required_regions is not None
        else {cloud: set(names) for cloud, names in lock.required_regions.items()}
    )
    if profile is not None and profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles)) or "none"
        return [LockProblem(profile, "profile", f"no such profile in the lock (known: {known})")]
    names = [profile] if profile is not None else sorted(lock.profiles)
    problems: list[LockProblem] = _check_base_images(lock)
    for name in names:
        body = lock.profiles[name]
        problems += _check_latest(body)
        numeric = _check_numeric(body)
        problems += numeric
        if not numeric:
            problems += _check_driver(lock, body, on)
        problems += _check_images(body, regions)
    return problems
