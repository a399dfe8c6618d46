"""An image-build stack on Alibaba Cloud: the ECS image pipeline that bakes one lock profile.

Its outputs are what `gpufleet images pin --stack NAME` reads (`pulumi stack output --json`): the profile, the
cloud, the parent image and `images`, region -> image id. Neither the pipeline nor its execution exposes the
image it bakes (this SDK's ImagePipelineExecution outputs only its status and creation time), so `images` is
empty until a bake is read back: after the execution reaches SUCCESS, list the images named `image_name` in
each region with DescribeImages and pin them from an outputs file (stacks/Pulumi.alicloud-images.yaml).
"""

from __future__ import annotations

import pulumi

from ...lock import load_lock
from ...lock.bundle import installer_parts
from ...tags import resource_tags
from .image_pipeline import AlicloudImagePipeline, AlicloudImagePipelineArgs, image_name
from .spec import AlicloudImagesSpec


def build_alicloud_images(spec: AlicloudImagesSpec) -> dict[str, pulumi.Output]:
    lock = load_lock()
    profile = lock.profiles[spec.profile]
    # None where the lock has the base unconfirmed: the plan shows the pipeline without one, `pulumi up` refuses.
    parent_image = lock.base_image(spec.cloud, spec.regions[0])
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
            "parent_image": pulumi.Output.from_input(parent_image)}
