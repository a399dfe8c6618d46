"""An image not baked yet: the tags that mark it on a launch template and the commands that bake and pin it.

The cluster components write these tags, the `aws-image-unbaked` policy reads them and the root program's
refusal names the same commands, so all three say the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ImageEntry

PROFILE_TAG = "gpufleet:image-profile"
STATUS_TAG = "gpufleet:image-status"
STACK_TAG = "gpufleet:image-stack"
UNBAKED = "unbaked"


def next_steps(stack: str | None) -> str:
    """What to run so that an unbaked image gets an id."""
    if not stack:
        return ("no image stack bakes it yet: add one for this cloud, bake with `pulumi up --stack STACK`, "
                "then `gpufleet images pin --stack STACK`")
    return f"bake it with `pulumi up --stack {stack}`, then pin its ids with `gpufleet images pin --stack {stack}`"


def image_tags(profile: str, entry: ImageEntry) -> dict[str, str]:
    """Tags naming the image profile a launch template boots and, when unbaked, that status and its stack."""
    tags = {PROFILE_TAG: profile, STATUS_TAG: entry.status}
    if entry.id is None and entry.stack:
        tags[STACK_TAG] = entry.stack
    return tags
