"""An image-build stack on Alibaba Cloud: the ECS image pipelines that bake one lock profile, one per boot mode.

Its outputs are what `gpufleet images pin --stack NAME` reads (`pulumi stack output --json`): the profile, the
cloud and, per boot mode (`boot_modes`), the base image and `images`, region -> image id. Neither a pipeline nor
its execution exposes the image it bakes (this SDK's ImagePipelineExecution outputs only its status and creation
time), so `images` is empty until a bake is read back (`pulumi up --refresh` after the execution reaches SUCCESS).
`images pin` takes only ids the execution itself names (DescribeImagePipelineExecutions, and its copies by the built
image's exact name: gpufleet/sources/alicloud_execution.py), never another execution's image of the same prefix.

Each bake starts from the base image id `gpufleet lock resolve --only base` recorded (images/lock.resolved.yaml),
never from a name looked up per run: reading the stack back never starts a new bake.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from gpufleet.clouds.alicloud.base_images import BakeBase, BaseImageRefused, bake_bases
from gpufleet.clouds.alicloud.stack_model import AlicloudImagesSpec
from gpufleet.lock import load_lock, loader
from gpufleet.lock.bundle import installer_parts
from gpufleet.lock.facts_loader import load_facts

from ... import runtime
from ...tags import resource_tags
from .image_pipeline import AlicloudImagePipeline, AlicloudImagePipelineArgs, image_name


def default_lock_path() -> Path:
    """The lock load_lock() reads when given none (tests point it at a copy): its resolved facts lie beside it."""
    return Path(loader.load_lock.__defaults__[0])


def build_alicloud_images(spec: AlicloudImagesSpec) -> dict[str, pulumi.Output]:
    lock = load_lock()
    profile = lock.profiles[spec.profile]
    build = spec.regions[0]
    # One bake per boot mode the profile keeps an image for in the build region (None: one image, no boot mode).
    modes = list(profile.image_entries(spec.cloud, build)) or [None]
    try:
        bases = bake_bases(lock, load_facts(default_lock_path()), spec.cloud, build, modes)
    except BaseImageRefused as refused:
        raise pulumi.RunError(str(refused)) from None
    refuse_unrecorded_bases(bases)
    parts = installer_parts(profile, "alicloud", spec.nvswitch)
    tags = resource_tags(spec.tags, spec.name, "images", **{"gpufleet:profile": spec.profile})
    bakes = {mode: bake(spec, mode, base, parts, tags) for mode, base in bases.items()}
    common = {"profile": pulumi.Output.from_input(spec.profile), "cloud": pulumi.Output.from_input(spec.cloud),
              # Who baked: `images pin --stack` takes only this stack's outputs.
              "project": pulumi.Output.from_input(pulumi.get_project()),
              "stack": pulumi.Output.from_input(pulumi.get_stack()),
              # Where each execution ran (the first) and copied to: `images pin` reads the execution there.
              "regions": pulumi.Output.from_input(list(spec.regions))}
    if None in bakes:
        return {**common, **{key: pulumi.Output.from_input(value) for key, value in bakes[None].items()}}
    return {**common, "boot_modes": pulumi.Output.from_input(bakes)}


def refuse_unrecorded_bases(bases: dict[Any, BakeBase | None]) -> None:
    """A real run stops before any resource while a bake's base image id is not recorded yet."""
    if runtime.running_offline():
        return
    for base in bases.values():
        if base is not None and base.status == "unresolved":
            raise pulumi.RunError(base.unresolved_message())


def bake(spec: AlicloudImagesSpec, mode: str | None, base: BakeBase | None, parts: list[str],
         tags: dict[str, str]) -> dict[str, Any]:
    """One pipeline and its execution, and what pinning reads of it."""
    pipeline = AlicloudImagePipeline(
        f"{spec.name}-{mode}" if mode else spec.name,
        AlicloudImagePipelineArgs(
            profile=spec.profile,
            parent_image=base.image_id if base else None,
            installer_parts=parts,
            regions=list(spec.regions),
            instance_type=spec.build_instance_type,
            tags=tags,
            boot_mode=mode,
            base_image_status=base.status if base else "unconfirmed",
        ),
    )
    return {"component_id": pipeline.component_id, "pipeline_id": pipeline.pipeline_id,
            "execution_id": pipeline.execution_id, "execution_status": pipeline.execution_status,
            "image_name": image_name(spec.profile, mode), "images": pipeline.images,
            "parent_image": base.image_id if base else None}
