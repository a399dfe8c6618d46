"""Alibaba Cloud image rules: nodes boot a literal image id pinned in images/lock.yaml; an unbaked lock entry
is reported with the commands that bake and pin it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.lock.status import PROFILE_TAG, STACK_TAG, STATUS_TAG, UNBAKED, next_steps

from ..lock import lock_module, unpinned
from ..meta import ADVISORY, MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, get
from .resource_types import NODE_TYPES

FIX = "use the image id pinned in images/lock.yaml for this profile and region"


def _unbaked_tags(props: Props) -> dict[str, Any] | None:
    tags = get(props, "tags")
    return tags if isinstance(tags, dict) and tags.get(STATUS_TAG) == UNBAKED else None


def check_image_pinned(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    image = get(props, "imageId")
    if image is UNKNOWN:
        return
    if not isinstance(image, str) or not image:
        if _unbaked_tags(props) is None:  # unbaked: alicloud-image-unbaked reports it, `pulumi up` refuses it
            yield f"image_id is not set: {FIX}"
        return
    lock = lock_module()
    if not lock.is_valid_image_id("alicloud", image):
        yield f"image_id {image!r} is not a literal image id (m-... or a dated public image name): {FIX}"
        return
    if problem := unpinned("alicloud", image, "image_id", FIX):
        yield problem


def check_image_unbaked(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    image, tags = get(props, "imageId"), _unbaked_tags(props)
    if image is UNKNOWN or (isinstance(image, str) and image) or tags is None:
        return
    yield (
        f"image profile {tags.get(PROFILE_TAG, '(unnamed)')!r} is not baked for this region yet "
        "(images/lock.yaml: id null, status unbaked): nodes boot no image and `pulumi up` refuses the stack; "
        f"{next_steps(tags.get(STACK_TAG))}"
    )


RULES: list[Rule] = [
    resource_rule(
        "alicloud-image-pinned",
        "Scaling configurations, launch templates and instances boot a literal image id pinned in images/lock.yaml.",
        MANDATORY,
        "alicloud",
        list(NODE_TYPES),
        check_image_pinned,
    ),
    resource_rule(
        "alicloud-image-unbaked",
        "Nodes boot a baked image; an unbaked lock entry is reported with the commands to bake and pin it.",
        ADVISORY,
        "alicloud",
        list(NODE_TYPES),
        check_image_unbaked,
    ),
]
