"""Shapes of image references per cloud, one regex per format: what a pinned, bootable image id looks like,
and what an image pipeline may start from. Every other module checks ids through these.
"""

from __future__ import annotations

import re

# Every shape is ASCII-only (\w and \d would take other scripts' letters and digits: a Cyrillic look-alike
# publisher) and used with fullmatch (`$` alone also matches before a trailing newline).
_A = re.ASCII

# An all-zero id is a placeholder, never an image.
AWS_AMI = re.compile(r"^ami-(?!0+$)(?:[0-9a-f]{8}|[0-9a-f]{17})$", _A)
AWS_REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d+$", _A)
# Marketplace URN publisher:offer:sku:version with an explicit numeric version (never "latest").
AZURE_URN = re.compile(r"^[A-Za-z0-9][\w.-]*:[\w.-]+:[\w.-]+:\d+\.\d+\.\d+$", _A)
AZURE_GALLERY_VERSION = re.compile(
    r"^/subscriptions/[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}/resourceGroups/[\w().-]+"
    r"/providers/Microsoft\.Compute/galleries/[\w.]+/images/[\w.-]+/versions/\d+\.\d+\.\d+$",
    re.IGNORECASE | _A,
)
# Custom image ids (m- and 20 lower-case alphanumerics) or public image names ending in a build date; the
# names carry the disk size in upper case (ubuntu_22_04_uefi_x64_20G_alibase_20230515.vhd).
ALICLOUD_CUSTOM = re.compile(r"^m-[0-9a-z]{20}$", _A)
ALICLOUD_PUBLIC = re.compile(r"^[a-z0-9][A-Za-z0-9_]*_\d{8}\.vhd$", _A)
# Alibaba region ids: cn-wulanchabu, cn-beijing, ap-southeast-1, cn-shanghai-finance-1.
ALICLOUD_REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+(?:-\d+)?$", _A)

# What EC2 Image Builder's ImageRecipe.parentImage accepts (Image Builder API reference, CreateImageRecipe
# parentImage: "AMI ID; Image Builder image ARN; SSM parameter prefixed by ssm:, followed by the parameter
# name or ARN; Marketplace product ID"). Taken here: an AMI id, an AWS-managed image ARN with an explicit
# major.minor.patch version (an x wildcard would select "the latest" at build time: refused), or an SSM
# parameter, which Image Builder resolves when the build runs.
AWS_MANAGED_IMAGE_VERSION = re.compile(
    r"^arn:aws[a-z-]*:imagebuilder:[a-z]{2}(?:-[a-z]+)+-\d+:aws:image/[a-z0-9-_]+/\d+\.\d+\.\d+(?:/\d+)?$", _A
)
AWS_SSM_PARAMETER = re.compile(r"^ssm:(?:/[A-Za-z0-9_.-]+)+$", _A)
# Azure region names as ARM takes them: eastus, southcentralus, westus2.
AZURE_REGION = re.compile(r"^[a-z]+[a-z0-9]*$", _A)
# Azure VM Image Builder starts from a PlatformImage (publisher, offer, sku, version): only an explicitly
# versioned marketplace URN is taken, never "latest" (which the service resolves when the build runs).

# Per cloud: the shapes of a bootable pinned image id, of a pipeline's parent image, and of a region name.
IMAGE_ID_SHAPES: dict[str, tuple[re.Pattern[str], ...]] = {
    "aws": (AWS_AMI,),
    "azure": (AZURE_URN, AZURE_GALLERY_VERSION),
    "alicloud": (ALICLOUD_CUSTOM, ALICLOUD_PUBLIC),
}
PARENT_IMAGE_SHAPES: dict[str, tuple[re.Pattern[str], ...]] = {
    "aws": (AWS_AMI, AWS_MANAGED_IMAGE_VERSION, AWS_SSM_PARAMETER),
    "azure": (AZURE_URN,),
    # EcsImagePipeline base_image with base_image_type IMAGE: a dated public image name or a custom image id.
    "alicloud": (ALICLOUD_PUBLIC, ALICLOUD_CUSTOM),
}
REGION_SHAPES: dict[str, re.Pattern[str]] = {"aws": AWS_REGION, "azure": AZURE_REGION, "alicloud": ALICLOUD_REGION}

EXPECTED_SHAPE: dict[str, str] = {
    "aws": "an AMI id: ami- followed by 8 or 17 lower-case hex digits",
    "azure": "an image URN publisher:offer:sku:<major.minor.build> or a gallery image version id",
    "alicloud": "an image id m- followed by 20 lower-case letters or digits, or a dated public image name",
}
EXPECTED_PARENT_SHAPE: dict[str, str] = {
    "aws": (
        "an AMI id, an Image Builder-managed image ARN with an explicit version "
        "(arn:aws:imagebuilder:REGION:aws:image/NAME/1.2.3) or an SSM parameter (ssm:/aws/service/...)"
    ),
    "azure": "a marketplace image URN publisher:offer:sku:<major.minor.build> with an explicit version",
    "alicloud": "a dated public image name (ubuntu_22_04_uefi_x64_20G_alibase_YYYYMMDD.vhd) or a custom image id m-...",
}
EXPECTED_REGION: dict[str, str] = {
    "aws": "an AWS region name",
    "azure": "an Azure region name (lower-case letters and digits, e.g. eastus)",
    "alicloud": "an Alibaba Cloud region id (e.g. cn-wulanchabu)",
}


def is_valid_image_id(cloud: str, image_id: str) -> bool:
    """Whether `image_id` is a bootable, pinned image id of `cloud` (what a cluster launches)."""
    return any(shape.fullmatch(image_id) for shape in IMAGE_ID_SHAPES.get(cloud, ()))


def is_valid_parent_image(cloud: str, reference: str) -> bool:
    """Whether `reference` is something `cloud`'s image pipeline can start a bake from."""
    return any(shape.fullmatch(reference) for shape in PARENT_IMAGE_SHAPES.get(cloud, ()))


def is_valid_region(cloud: str, region: str) -> bool:
    """Whether `region` has the shape of a `cloud` region name (False for a cloud with no pipeline yet)."""
    shape = REGION_SHAPES.get(cloud)
    return bool(shape and shape.fullmatch(region))

# What a bake made, per cloud: an Image Builder image build version ARN (AWS), the id of a custom image (Alibaba).
AWS_IMAGE_BUILD_ARN = re.compile(
    r"arn:aws[a-z-]*:imagebuilder:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):\d{12}:image/[a-z0-9_-]+/\d+\.\d+\.\d+/\d+", _A
)
