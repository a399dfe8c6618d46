"""An image-build stack on Alibaba Cloud: the ECS image pipeline that bakes one lock profile.

Its outputs are what `gpufleet images pin --stack NAME` reads (`pulumi stack output --json`): the profile, the
cloud, the parent image and `images`, region -> image id. Neither the pipeline nor its execution exposes the
image it bakes (this SDK's ImagePipelineExecution outputs only its status and creation time), so `images` is
empty until a bake is read back: after the execution reaches SUCCESS, list the images named `image_name` in
each region with DescribeImages and pin them from an outputs file (stacks/Pulumi.alicloud-images.yaml).
"""

from __future__ import annotations

import re

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.alicloud.stack_model import AlicloudImagesSpec
from gpufleet.lock import load_lock
from gpufleet.lock.bundle import installer_parts
from gpufleet.lock.model import BaseImage

from ... import runtime
from ...tags import resource_tags
from .image_pipeline import AlicloudImagePipeline, AlicloudImagePipelineArgs, image_name


def build_alicloud_images(spec: AlicloudImagesSpec) -> dict[str, pulumi.Output]:
    lock = load_lock()
    profile = lock.profiles[spec.profile]
    # Pinned, resolved now from the lock's name pattern, or None where unconfirmed (the plan shows the pipeline
    # without one, `pulumi up` refuses).
    parent_image = resolve_base_image(lock.base_image_entry(spec.cloud, spec.regions[0]))
    pipeline = AlicloudImagePipeline(
        spec.name,
        AlicloudImagePipelineArgs(
            profile=spec.profile,
            parent_image=parent_image,
            installer_parts=installer_parts(profile, "alicloud", spec.nvswitch),
            regions=list(spec.regions),
            instance_type=spec.build_instance_type,
            tags=resource_tags(spec.tags, spec.name, "images", **{"gpufleet:profile": spec.profile}),
        ),
    )
    return {"component_id": pipeline.component_id, "pipeline_id": pipeline.pipeline_id,
            "execution_id": pipeline.execution_id, "execution_status": pipeline.execution_status,
            "image_name": pulumi.Output.from_input(image_name(spec.profile)),
            "images": pipeline.images,
            "profile": pulumi.Output.from_input(spec.profile), "cloud": pulumi.Output.from_input(spec.cloud),
            # Who baked: `images pin --stack` takes only this stack's outputs.
            "project": pulumi.Output.from_input(pulumi.get_project()),
            "stack": pulumi.Output.from_input(pulumi.get_stack()),
            "parent_image": pulumi.Output.from_input(parent_image)}


def resolve_base_image(base: BaseImage | None) -> pulumi.Input[str] | None:
    """The base image: the lock's pinned one, or (status resolved) the newest Available system image of the build
    region whose name fully matches the lock's name_regex (DescribeImages through ecs.getImages, as the AWS bake
    resolves Canonical's SSM parameter). A public image's id is its name (ubuntu_22_04_..._alibase_YYYYMMDD.vhd)."""
    if base is None or base.status != "resolved":
        return base.parent_image if base else None
    pattern = base.name_regex or ""
    found = alicloud.ecs.get_images_output(name_regex=pattern, owners="system", most_recent=True, status="Available",
                                           os_type="linux", architecture="x86_64")

    def newest(images: list[dict[str, str]]) -> str | None:
        # The provider's name_regex is Go's (unanchored unless written so); the lock's is anchored, and checked again.
        named = [i["id"] for i in images if re.fullmatch(pattern, i["name"]) and re.fullmatch(pattern, i["id"])]
        if named:
            return named[0]
        if runtime.running_offline():
            return None  # the offline engine knows no image: the plan shows none rather than invent one
        raise ValueError(f"images/lock.yaml base_images: no Available system image matches {pattern!r}")

    return found.images.apply(newest)
