"""AWS image rule: launch templates and image recipes boot a literal AMI id pinned in images/lock.yaml."""

from __future__ import annotations

from collections.abc import Iterator

from ..lock import lock_module
from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, get
from .resource_types import IMAGE_RECIPE, LAUNCH_TEMPLATE


def check_image_pinned(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    key, arg = ("parentImage", "parent_image") if resource_type == IMAGE_RECIPE else ("imageId", "image_id")
    image = get(props, key)
    if image is UNKNOWN:
        return
    fix = "use the AMI id pinned in images/lock.yaml for this profile and region"
    if not isinstance(image, str) or not image:
        yield f"{arg} is not set: {fix}"
        return
    if image.startswith("resolve:ssm:"):
        yield f"{arg} {image!r} resolves at launch time, so nodes drift: {fix}"
        return
    lock = lock_module()  # one AMI id format: the lock's
    if not lock.is_valid_image_id("aws", image):
        yield f"{arg} {image!r} is not a literal AMI id: {fix}"
        return
    try:
        pinned = lock.load_lock().image_ids("aws")
    except (lock.LockError, OSError) as exc:
        yield f"images/lock.yaml could not be read ({exc}), so {arg} {image!r} is unchecked: fix the lock"
        return
    if image not in pinned:
        yield f"{arg} {image!r} is not pinned in images/lock.yaml: {fix}"


RULES: list[Rule] = [
    resource_rule(
        "aws-image-pinned",
        "Launch templates and image recipes use a literal AMI id pinned in images/lock.yaml.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, IMAGE_RECIPE],
        check_image_pinned,
    ),
]
