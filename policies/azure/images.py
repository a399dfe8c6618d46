"""Azure image rule: scale sets boot a gallery image version id or an explicitly versioned marketplace image
pinned in images/lock.yaml, and Image Builder templates start from the lock's versioned base image; never
"latest", which resolves at deploy (or build) time so nodes drift."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.lock.image_ids import EXPECTED_SHAPE
from gpufleet.lock.status import STATUS_TAG, UNBAKED

from ..lock import lock_module, unpinned
from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, get
from .resource_types import VM_PROFILE, VMSS

IMAGE_TEMPLATE = "azure-native:virtualmachineimages:VirtualMachineImageTemplate"
URN_PARTS = ("publisher", "offer", "sku", "version")


def _reference(image: Any) -> str | None | Any:
    """The image a reference names: its id, or publisher:offer:sku:version; UNKNOWN when part is unknown."""
    if image is UNKNOWN or not isinstance(image, dict):
        return UNKNOWN if image is UNKNOWN else None
    if get(image, "id"):
        return get(image, "id")
    parts = [get(image, part) for part in URN_PARTS]
    if any(part is UNKNOWN for part in parts):
        return UNKNOWN
    return ":".join(str(part or "") for part in parts) if any(parts) else None


def check_image_pinned(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    template = resource_type == IMAGE_TEMPLATE
    image = _reference(get(props, "source") if template else get(props, VM_PROFILE, "storageProfile", "imageReference"))
    where = "source" if template else "virtual_machine_profile.storage_profile.image_reference"
    fix = ("use the base image pinned in images/lock.yaml base_images" if template
           else "use the image pinned in images/lock.yaml for this profile and region")
    if image is UNKNOWN:
        return
    if not image:
        tags = get(props, "tags")
        if not template and isinstance(tags, dict) and tags.get(STATUS_TAG) == UNBAKED:
            return  # an unbaked profile: the plan says so and `pulumi up` refuses the stack
        yield f"{where} names no image: {fix}"
        return
    if "latest" in str(image).lower():
        yield f"{where} {image!r} resolves 'latest' when it runs, so nodes drift: {fix}"
        return
    lock = lock_module()
    if not lock.is_valid_image_id("azure", image):
        yield f"{where} {image!r} is not {EXPECTED_SHAPE['azure']}: {fix}"
        return
    if problem := unpinned("azure", image, where, fix):
        yield problem


RULES: list[Rule] = [
    resource_rule(
        "azure-image-pinned",
        "Scale sets boot, and image templates start from, an explicitly versioned image pinned in images/lock.yaml.",
        MANDATORY, "azure", [VMSS, IMAGE_TEMPLATE], check_image_pinned,
    ),
]
