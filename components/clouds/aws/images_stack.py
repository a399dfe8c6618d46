"""An image-build stack: the EC2 Image Builder pipeline that bakes one lock profile.

Its outputs are what `gpufleet images pin --stack NAME` reads (`pulumi stack output --json`): the profile,
`amis` (region -> AMI id of this bake), the image build ARN and the parent image the recipe started from. A Kubernetes
profile (one with `kubernetes:`) bakes on its own base, Canonical's EKS image of its Kubernetes minor, the rest on the
lock's base_images.
"""

from __future__ import annotations

import pulumi

from gpufleet.clouds.aws.stack_model import AwsImagesSpec
from gpufleet.lock import load_lock
from gpufleet.lock.bundle import installer_parts
from gpufleet.lock.facts import base_image_key

from ...tags import resource_tags
from .image_pipeline import AwsImagePipeline, AwsImagePipelineArgs


def build_aws_images(spec: AwsImagesSpec) -> dict[str, pulumi.Output]:
    lock = load_lock()
    profile = lock.profiles[spec.profile]
    parent_image = lock.profile_base_image(spec.profile, spec.cloud, spec.regions[0])
    if parent_image is None and profile.kubernetes is not None:
        raise ValueError(f"regions[0]: images/lock.yaml pins no Kubernetes {profile.kubernetes.version} node base for "
                         f"{spec.cloud} in {spec.regions[0]}; add profiles.{spec.profile}.kubernetes.base_images."
                         f"{spec.cloud}.{spec.regions[0]}")
    # The AMI `lock resolve` read behind the parameter, so a bake starts from the recorded id, never from what the
    # parameter names on the day it runs (without a record the plan shows the parameter; `up` refuses it first).
    recorded = lock.resolved.base_images.get(base_image_key(spec.cloud, spec.regions[0], parent_image or ""))
    parent_image = recorded.image_id if recorded is not None else parent_image
    pipeline = AwsImagePipeline(
        spec.name,
        AwsImagePipelineArgs(
            profile=spec.profile,
            # validate_images made sure the lock pins a parent image for the build region.
            parent_image=parent_image or "",
            installer_parts=installer_parts(profile, "aws", spec.nvswitch),
            regions=list(spec.regions),
            instance_types=list(spec.build_instance_types),
            kms_key_arn=None if spec.kms_key == "create" else spec.kms_key,
            replica_kms_key_arns=dict(spec.replica_kms_keys),
            subnet_id=spec.network.subnet_id,
            security_group_ids=[spec.network.security_group_id] if spec.network.security_group_id else None,
            build_network=None if spec.network.subnet_id else (spec.network.cidr, spec.build_zone(),
                                                              spec.network.log_retention_days),
            tags=resource_tags(spec.tags, spec.name, "images", **{"gpufleet:profile": spec.profile}),
        ),
    )
    return {"pipeline_arn": pipeline.pipeline_arn, "recipe_arn": pipeline.recipe_arn,
            "kms_key_arn": pipeline.kms_key_arn, "image_arn": pipeline.image_arn, "amis": pipeline.amis,
            "profile": pulumi.Output.from_input(spec.profile), "cloud": pulumi.Output.from_input(spec.cloud),
            # Who baked: `images pin --stack` takes only this stack's outputs.
            "project": pulumi.Output.from_input(pulumi.get_project()),
            "stack": pulumi.Output.from_input(pulumi.get_stack()),
            "parent_image": pulumi.Output.from_input(parent_image)}
