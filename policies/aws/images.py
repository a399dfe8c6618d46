"""AWS image rules: launch templates boot a literal AMI id pinned in images/lock.yaml (image recipes a
pinnable parent image), and an unbaked lock entry is reported with the commands that bake and pin it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.lock.image_ids import EXPECTED_PARENT_SHAPE, is_valid_parent_image
from gpufleet.lock.status import PROFILE_TAG, STACK_TAG, STATUS_TAG, UNBAKED, next_steps

from ..lock import lock_module, unpinned
from ..meta import ADVISORY, MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, eks_supplies_the_image, get
from .resource_types import IMAGE_RECIPE, LAUNCH_TEMPLATE


def _unbaked_tags(props: Props) -> dict[str, Any] | None:
    """The launch template's tags when they mark its image profile unbaked (gpufleet.lock.status)."""
    tags = get(props, "tags")
    return tags if isinstance(tags, dict) and tags.get(STATUS_TAG) == UNBAKED else None


def check_image_pinned(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    recipe = resource_type == IMAGE_RECIPE
    key, arg = ("parentImage", "parent_image") if recipe else ("imageId", "image_id")
    image = get(props, key)
    if image is UNKNOWN:
        return
    fix = (
        "use the parent image pinned in images/lock.yaml base_images" if recipe
        else "use the AMI id pinned in images/lock.yaml for this profile and region"
    )
    if not isinstance(image, str) or not image:
        if not recipe and _unbaked_tags(props) is not None:
            return  # an unbaked profile: aws-image-unbaked reports it and `pulumi up` refuses the stack
        if not recipe and eks_supplies_the_image(props):
            return  # an EKS managed node group's (the system group): EKS picks the AMI of the cluster's minor
        yield f"{arg} is not set: {fix}"
        return
    if image.startswith("resolve:ssm:"):
        yield f"{arg} {image!r} resolves at launch time, so nodes drift: {fix}"
        return
    if recipe and not is_valid_parent_image("aws", image):
        yield f"{arg} {image!r} is not a pinnable parent image (expected {EXPECTED_PARENT_SHAPE['aws']}): {fix}"
        return
    lock = lock_module()  # one AMI id format: the lock's
    if not recipe and not lock.is_valid_image_id("aws", image):
        yield f"{arg} {image!r} is not a literal AMI id: {fix}"
        return
    if problem := unpinned("aws", image, arg, fix):
        yield problem


def check_image_unbaked(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    """A launch template of a profile the lock has no image for yet: it plans, but cannot deploy."""
    image = get(props, "imageId")
    tags = _unbaked_tags(props)
    if image is UNKNOWN or (isinstance(image, str) and image) or tags is None:
        return
    yield (
        f"image profile {tags.get(PROFILE_TAG, '(unnamed)')!r} is not baked for this region yet "
        "(images/lock.yaml: id null, status unbaked): the launch template boots no image and `pulumi up` "
        f"refuses the stack; {next_steps(tags.get(STACK_TAG))}"
    )


RULES: list[Rule] = [
    resource_rule(
        "aws-image-pinned",
        "Launch templates use a literal AMI id, image recipes a parent image, pinned in images/lock.yaml.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, IMAGE_RECIPE],
        check_image_pinned,
    ),
    resource_rule(
        "aws-image-unbaked",
        "Launch templates boot a baked image; an unbaked lock entry is reported with the commands to bake and pin it.",
        ADVISORY,
        "aws",
        [LAUNCH_TEMPLATE],
        check_image_unbaked,
    ),
]
