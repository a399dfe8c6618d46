"""image-lock-valid: the stack's image profile passes the lock checks, on every cloud and for image stacks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

from ..lock import lock_module
from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule


def check_image_lock(stack: Stack, config: Config) -> Iterator[Finding]:
    profile = config.get("profile")
    if not isinstance(profile, str) or not profile:
        raise NotApplicable("no image profile configured (profile)")
    # cloud -> regions, the shape check_lock takes; None checks the lock's own required regions.
    regions = {cloud: set(names) for cloud, names in (config.get("requiredRegions") or {}).items()} or None
    lock = lock_module()
    try:
        problems = lock.check_lock(lock.load_lock(), date.today(), required_regions=regions, profile=profile)
    except (lock.LockError, OSError) as exc:
        yield None, f"images/lock.yaml could not be read: {exc}: fix the lock file (gpufleet images check)"
        return
    for problem in problems:
        yield (
            None,
            (
                f"image profile {problem.profile!r}, {problem.field}: {problem.message} "
                "(run `gpufleet images check` and fix images/lock.yaml)"
            ),
        )


RULE: Rule = stack_rule(
    "image-lock-valid",
    "The stack's image profile passes the lock checks (driver, fabric manager, CUDA, image ids).",
    MANDATORY,
    "any",
    [],
    check_image_lock,
    schema=config_schema(
        {
            "profile": {"type": "string", "description": "image profile in images/lock.yaml"},
            "requiredRegions": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "description": "cloud -> regions the profile must carry an image id for",
            },
        }
    ),
)
