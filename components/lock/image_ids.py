"""Shapes of image ids per cloud: what a pinned, bootable image reference looks like."""

from __future__ import annotations

import re

_AWS_AMI = re.compile(r"^ami-(?:[0-9a-f]{8}|[0-9a-f]{17})$")
# Marketplace URN publisher:offer:sku:version with an explicit numeric version (never "latest").
_AZURE_URN = re.compile(r"^[A-Za-z0-9][\w.-]*:[\w.-]+:[\w.-]+:\d+\.\d+\.\d+$")
_AZURE_GALLERY_VERSION = re.compile(
    r"^/subscriptions/[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}/resourceGroups/[\w().-]+"
    r"/providers/Microsoft\.Compute/galleries/[\w.]+/images/[\w.-]+/versions/\d+\.\d+\.\d+$",
    re.IGNORECASE,
)
# Custom image ids (m- and 20 lower-case alphanumerics) or public image names ending in a build date.
_ALICLOUD_CUSTOM = re.compile(r"^m-[0-9a-z]{20}$")
_ALICLOUD_PUBLIC = re.compile(r"^[a-z0-9][a-z0-9_]*_\d{8}\.vhd$")

EXPECTED_SHAPE: dict[str, str] = {
    "aws": "an AMI id: ami- followed by 8 or 17 lower-case hex digits",
    "azure": "an image URN publisher:offer:sku:<major.minor.build> or a gallery image version id",
    "alicloud": "an image id m- followed by 20 lower-case letters or digits, or a dated public image name",
}


def is_valid_image_id(cloud: str, image_id: str) -> bool:
    if cloud == "aws":
        return bool(_AWS_AMI.match(image_id))
    if cloud == "azure":
        return bool(_AZURE_URN.match(image_id) or _AZURE_GALLERY_VERSION.match(image_id))
    if cloud == "alicloud":
        return bool(_ALICLOUD_CUSTOM.match(image_id) or _ALICLOUD_PUBLIC.match(image_id))
    return False
