"""ECS image pipeline (Alibaba Cloud Image Builder) that bakes one pinned driver image profile.

An image component runs the installer on a build instance started from the lock's base image; the pipeline
(image template) distributes the image to the other regions, and one execution bakes it when the stack is
deployed. Encryption: the pipeline (CreateImagePipeline, and this SDK's EcsImagePipeline) has no KMS or
encryption setting, so the baked image is not encrypted; clusters encrypt the system and data disks they
create from it with their own KMS key (nodegroup.py, the key from storage.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.lock.bundle import content_version, image_check
from gpufleet.lock.image_ids import EXPECTED_PARENT_SHAPE, EXPECTED_REGION, is_valid_parent_image, is_valid_region

# Image names: 2-64 characters, starting with a letter (CreateImagePipeline ImageName is a name prefix).
PROFILE = re.compile(r"^[A-Za-z0-9][-_A-Za-z0-9.]{0,40}$")
INSTANCE_TYPE = re.compile(r"^ecs\.[a-z0-9-]+\.[a-z0-9]+$")
# CreateImageComponent: "The content size of an image component cannot exceed 16 KB"; CreateImagePipeline
# BuildContent: "The content size cannot exceed 16 KB". The installer comes in parts (bundle.installer_parts).
MAX_CONTENT_BYTES = 16 * 1024


@dataclass(frozen=True)
class AlicloudImagePipelineArgs:
    """Inputs of AlicloudImagePipeline."""

    profile: str
    """Image profile name from images/lock.yaml; the prefix of every baked image's name."""
    parent_image: str | None
    """The base image of the build region: a public image name or a custom image id, pinned in the lock or recorded
    by `gpufleet lock resolve --only base` (images/lock.resolved.yaml). None where the lock has it unconfirmed or no
    id is recorded yet: the pipeline is then planned without a base image (offline plans only; a real run is refused
    before any resource)."""
    installer_parts: list[str]
    """One-line shell commands the build runs as root in order, one component each
    (gpufleet.lock.bundle.installer_parts): the last installs."""
    regions: list[str]
    """The first is the build region (where the pipeline runs); the image is copied to the others."""
    instance_type: str
    """The build instance (no GPU needed to install drivers)."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for every resource."""
    vswitch_id: pulumi.Input[str] | None = None
    """vSwitch of the build instance; None lets the service create a VPC and vSwitch for the build."""
    internet_max_bandwidth_out: int = 100
    """Public bandwidth of the build instance in Mbit/s (0-100): the installer fetches the NVIDIA, Ubuntu and
    eRDMA packages, so 0 needs a vswitch_id behind a NAT gateway. The instance is released after the build."""
    system_disk_gb: int = 40
    """System disk of the build instance and so the image (20-500 GiB)."""
    boot_mode: str | None = None
    """The boot mode of the base image and so of the baked one (uefi, bios): a stack bakes one image per boot mode,
    each named after it. None: the lock records none."""
    base_image_status: str = "pinned"
    """Where parent_image came from (pinned, recorded) or why it is missing (unconfirmed, unresolved): a tag."""

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or not PROFILE.match(self.profile):
            raise ValueError(f"profile: {self.profile!r} must be 1-41 letters, digits, '-', '_' or '.'")
        image = self.parent_image
        if image is not None and not is_valid_parent_image("alicloud", image):
            raise ValueError(f"parent_image: {image!r} is not pinnable: expected {EXPECTED_PARENT_SHAPE['alicloud']}")
        if not self.installer_parts or not all(isinstance(p, str) and p.strip() and "\n" not in p
                                               for p in self.installer_parts):
            raise ValueError("installer_parts: must be one or more non-empty one-line shell commands")
        if not self.regions:
            raise ValueError("regions: needs at least one region (the first is the build region)")
        for region in self.regions:
            if not isinstance(region, str) or not is_valid_region("alicloud", region):
                raise ValueError(f"regions: {region!r} is not {EXPECTED_REGION['alicloud']}")
        if len(set(self.regions)) != len(self.regions):
            raise ValueError(f"regions: {self.regions} lists a region twice")
        if not INSTANCE_TYPE.match(self.instance_type):
            raise ValueError(f"instance_type: {self.instance_type!r} is not an ECS instance type (ecs.FAMILY.SIZE)")
        if not 0 <= self.internet_max_bandwidth_out <= 100:
            raise ValueError("internet_max_bandwidth_out: must be 0 to 100 Mbit/s")
        if self.internet_max_bandwidth_out == 0 and self.vswitch_id is None:
            raise ValueError("internet_max_bandwidth_out: 0 leaves the build without internet; give a vswitch_id")
        if not 20 <= self.system_disk_gb <= 500:
            raise ValueError(f"system_disk_gb: must be 20 to 500 GiB, got {self.system_disk_gb!r}")
        for index, content in enumerate(component_contents(self.installer_parts)):
            size = len(content.encode())
            if size > MAX_CONTENT_BYTES:
                raise ValueError(f"installer_parts[{index}]: its component would be {size} bytes; "
                                 "an image component takes 16 KB")


def component_contents(installer_parts: list[str]) -> list[str]:
    """The image components in run order, in the Dockerfile format of the template that lists them (`COMPONENT
    <id>` lines): one RUN per line. One format throughout: the provider's own example pairs a `RUN ...` component
    with a `COMPONENT ic-...` build_content (terraform-provider-alicloud website/docs/r/ecs_image_component and
    ecs_image_pipeline_execution examples); no source here shows a YAML component inside a Dockerfile template."""
    *writes, install = installer_parts
    # The build instance is not rebooted here (a Dockerfile-format restart is not confirmed): it runs the base image's
    # kernel, the one the image boots (kernel.sh), and the check reads that kernel's modules.
    return [*(f"RUN {write}\n" for write in writes), f"RUN {install}\nRUN {image_check(booted=False)}\n"]


def image_name(profile: str, boot_mode: str | None = None) -> str:
    """Name prefix of the baked images (ImageName): how DescribeImages finds them after a bake; one per boot mode."""
    return f"gpufleet-{profile}" + (f"-{boot_mode}" if boot_mode else "")


class AlicloudImagePipeline(pulumi.ComponentResource):
    """Image component, image pipeline (template) and the execution that bakes it once per `pulumi up`."""

    component_id: pulumi.Output[str]
    pipeline_id: pulumi.Output[str]
    execution_id: pulumi.Output[str]
    execution_status: pulumi.Output[str]
    """The build task's status as the provider last read it (BUILDING, DISTRIBUTING, SUCCESS, ...)."""

    def __init__(self, name: str, args: AlicloudImagePipelineArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:ImagePipeline", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        components = create_components(name, args, child)
        pipeline, execution = create_pipeline(name, args, components, child)

        self.component_id = components[-1].id
        self.pipeline_id = pipeline.id
        self.execution_id = execution.id
        self.execution_status = execution.status
        self.images = baked_images(name, args, execution, child)
        self.register_outputs(
            {
                "component_id": self.component_id,
                "pipeline_id": self.pipeline_id,
                "execution_id": self.execution_id,
                "execution_status": self.execution_status,
                "images": self.images,
            }
        )


def create_components(
    name: str, args: AlicloudImagePipelineArgs, child: pulumi.ResourceOptions
) -> list[alicloud.ecs.EcsImageComponent]:
    """One image component per installer part, in run order; the last installs and checks."""
    contents = component_contents(args.installer_parts)
    last = len(contents) - 1
    return [
        alicloud.ecs.EcsImageComponent(
            f"{name}-install" if index == last else f"{name}-part{index}",
            # A component name starts with an upper-case letter (CreateImageComponent Name).
            image_component_name=f"Gpufleet-{args.profile}" + (f"-{args.boot_mode}" if args.boot_mode else "")
            + ("" if index == last else f"-part{index}"),
            # Components are immutable per version: the same content is the same version.
            component_version=content_version(content),
            component_type="Build",
            system_type="Linux",
            content=content,
            description=f"Install the pinned GPU driver stack of image profile {args.profile}, "
                        f"part {index + 1} of {len(contents)}",
            tags=args.tags,
            opts=child,
        )
        for index, content in enumerate(contents)
    ]


def create_pipeline(
    name: str, args: AlicloudImagePipelineArgs, components: list[alicloud.ecs.EcsImageComponent],
    child: pulumi.ResourceOptions,
) -> tuple[alicloud.ecs.EcsImagePipeline, alicloud.ecs.ImagePipelineExecution]:
    """The pipeline (image template) that runs the components and copies the image to the other regions, and the
    first bake; the pipeline rebakes later from the console or StartImagePipelineExecution."""
    build_region, *copies = args.regions
    missing = {"unconfirmed": f"BASE IMAGE UNCONFIRMED: pin base_images.alicloud.{build_region} in images/lock.yaml",
               "unresolved": "BASE IMAGE NOT RECORDED: run `gpufleet lock resolve --only base`"}
    pipeline = alicloud.ecs.EcsImagePipeline(
        f"{name}-pipeline",
        name=image_name(args.profile, args.boot_mode),
        # A missing base is left out, not invented: the SDK checks the argument is given, so it travels as an
        # output that resolves to nothing; a real run never gets here (it is refused before any resource).
        base_image=args.parent_image or pulumi.Output.from_input(None),
        base_image_type="IMAGE",
        # Several COMPONENT lines run in order (CreateImagePipeline BuildContent's own example lists two).
        build_content=pulumi.Output.all(*(c.id for c in components)).apply(
            lambda ids: "".join(f"COMPONENT {i}\n" for i in ids)),
        image_name=image_name(args.profile, args.boot_mode),
        to_region_ids=copies or None,
        instance_type=args.instance_type,
        vswitch_id=args.vswitch_id,
        internet_max_bandwidth_out=args.internet_max_bandwidth_out,
        system_disk_size=args.system_disk_gb,
        delete_instance_on_failure=True,
        description=f"gpufleet image profile {args.profile}" + (f" ({args.boot_mode})" if args.boot_mode else "")
        + (f"; {missing[args.base_image_status]}" if args.parent_image is None else ""),
        tags={**args.tags, "gpufleet:base-image-status": args.base_image_status}
        | ({"gpufleet:boot-mode": args.boot_mode} if args.boot_mode else {}),
        opts=child,
    )
    execution = alicloud.ecs.ImagePipelineExecution(f"{name}-bake", image_pipeline_id=pipeline.id, opts=child)
    return pipeline, execution


def baked_images(name: str, args: AlicloudImagePipelineArgs, execution: alicloud.ecs.ImagePipelineExecution,
                 child: pulumi.ResourceOptions) -> pulumi.Output[dict[str, str]]:
    """Region -> id of the newest own image named after the profile and made after this execution started, as
    DescribeImages lists it.

    Neither the pipeline nor the execution exposes the image ids (the provider's ImagePipelineExecution outputs
    status and create_time; DescribeImagePipelineExecutions' ImageId is not read by it), so the stack reads them back
    and keeps only images created at or after the execution's create_time: an older bake of the same name is never
    taken. On the `pulumi up` that bakes, the lookup may run before the build ends and find none; `images pin` takes
    the ids only when execution_status is SUCCESS, after a later `pulumi up --refresh` read the new ones, and only
    those the execution itself names (a later execution's image also matches the prefix and the time bound).
    """
    build_region, *copies = args.regions
    lookups = []
    for region in args.regions:
        provider = None if region == build_region else alicloud.Provider(f"{name}-{region}", region=region, opts=child)
        found = alicloud.ecs.get_images_output(
            name_regex=f"^{re.escape(image_name(args.profile, args.boot_mode))}", owners="self", most_recent=True,
            status="Available",
            opts=pulumi.InvokeOutputOptions(parent=child.parent, provider=provider, depends_on=[execution]),
        )
        lookups.append(found.images)
    return pulumi.Output.all(execution.create_time, *lookups).apply(lambda found: made_since(args.regions, *found))


def made_since(regions: list[str], started: str | None, *found: list[dict[str, Any]]) -> dict[str, str]:
    """Region -> the newest image created at or after `started` (ISO 8601 UTC, as both APIs write it)."""
    if not started:
        return {}  # the execution's start is not known yet: nothing can be tied to it
    since = datetime.fromisoformat(started.replace("Z", "+00:00"))
    made = {}
    for region, images in zip(regions, found, strict=True):
        fresh = [i for i in images if i.get("creation_time")
                 and datetime.fromisoformat(i["creation_time"].replace("Z", "+00:00")) >= since]
        if fresh:
            made[region] = max(fresh, key=lambda i: i["creation_time"])["id"]
    return made
