"""`gpufleet images check`: the lock's own checks, plus every region a shipped stack boots in."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from .stackfile import CLUSTER_KEY, IMAGES_KEY, SpecError, SpecInvalid, load_stack, stack_names, stack_path


def regions_in_use(stacks_dir: Path) -> dict[str, set[str]]:
    """cloud -> regions that the shipped stacks deploy clusters to or distribute images to."""
    used: dict[str, set[str]] = {}
    for name in stack_names(stacks_dir):
        config = load_stack(stack_path(stacks_dir, name), stacks_dir)
        cluster, images = config.get(CLUSTER_KEY), config.get(IMAGES_KEY)
        if isinstance(cluster, dict) and cluster.get("cloud") and cluster.get("region"):
            used.setdefault(cluster["cloud"], set()).add(cluster["region"])
        if isinstance(images, dict) and images.get("cloud"):
            used.setdefault(images["cloud"], set()).update(images.get("regions") or [])
    return used


def check_images(
    stacks_dir: Path, on: date, profile: str | None = None, lock_file: Path | None = None
) -> list[dict[str, str]]:
    from .lock import DEFAULT_LOCK_PATH, check_lock, load_lock
    from .lock.check import check_downloads

    lock = load_lock(lock_file or DEFAULT_LOCK_PATH)  # LockError is a SpecInvalid naming the file and fields
    if profile is not None and profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        raise SpecInvalid([SpecError("--profile", f"unknown profile {profile!r}; images/lock.yaml has: {known}")])
    problems = check_lock(lock, on, required_regions=regions_in_use(stacks_dir), profile=profile)
    problems += [found for name in ([profile] if profile else sorted(lock.profiles))
                 for found in check_downloads(lock.profiles[name])]
    return [{"profile": p.profile, "field": p.field, "message": p.message} for p in problems]


def image_notes(profile: str | None = None, lock_file: Path | None = None) -> list[dict[str, str]]:
    """What the lock records as not known yet (reported, never failing the check): e.g. a Kubernetes node image's
    kubelet before it was read off a bake."""
    from .lock import DEFAULT_LOCK_PATH, load_lock
    from .lock.check import lock_notes

    notes = lock_notes(load_lock(lock_file or DEFAULT_LOCK_PATH), profile)
    return [{"profile": n.profile, "field": n.field, "message": n.message} for n in notes]
