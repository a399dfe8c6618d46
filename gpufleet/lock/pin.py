"""`gpufleet images pin`: write the image ids a bake produced (its stack outputs, as `pulumi stack output
--json` prints them) into images/lock.yaml, changing only those ids and their status.

The lock is edited with ruamel.yaml's round trip, so comments, key order, quoting, anchors and every other
byte stay as they were; the result is validated as a Lock before it replaces the file.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from ruamel.yaml import YAML

from .boot_modes import BOOT_MODES, BootMode
from .image_ids import (
    ALICLOUD_CUSTOM,
    AWS_AMI,
    AWS_IMAGE_BUILD_ARN,
    AZURE_GALLERY_VERSION,
    EXPECTED_REGION,
    EXPECTED_SHAPE,
    REGION_SHAPES,
    is_valid_image_id,
    is_valid_region,
)

# The state each cloud's bake ends in when it made its images: Azure's last run (Succeeded, the image template's
# lastRunStatus.runState), Alibaba's execution (SUCCESS; DescribeImagePipelineExecutions: PARTITION_SUCCESS means a
# copy or share may have failed, TEST_FAILED an image whose tests failed). AWS's Image resource is created only
# once Image Builder reports the image AVAILABLE, so its build ARN in the outputs is the proof.
from .loader import LockError, load_lock
from .model import Profile

FINISHED = {"azure": ("build_status", "Succeeded"), "alicloud": ("execution_status", "SUCCESS")}


class PinError(ValueError):
    """The outputs or the lock cannot be pinned; the message names the field (exit 2)."""


class ImageStackOutputs(BaseModel):
    """The outputs of an image stack (components/clouds/<cloud>/images_stack.py) that pinning reads: the
    profile, the cloud and `images`, region -> image id of the bake (AWS's stack names it `amis`). Each cloud
    is checked against its own id and region shapes (gpufleet/lock/image_ids.py)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    profile: str = Field(..., min_length=1)
    cloud: Literal[tuple(REGION_SHAPES)]  # type: ignore[valid-type]  # the clouds with an image pipeline
    images: dict[str, str] = Field(
        ..., min_length=1, validation_alias=AliasChoices("images", "amis"), description="region -> image id"
    )
    build_status: str | None = Field(None, description="Azure: the bake's last run state")
    execution_status: str | None = Field(None, description="Alibaba: the bake's execution status")
    execution_id: str | None = Field(None, description="Alibaba: the execution that baked the images")
    image_arn: str | None = Field(None, description="AWS: the Image Builder image build version of the bake")
    gallery_image_id: str | None = Field(None, description="Azure: the stack's own gallery image definition")
    stack: str | None = Field(None, description="the stack that exported these outputs (pulumi.get_stack())")
    parent_image: str | None = Field(None, description="the base image the bake started from")
    regions: list[str] | None = Field(None, description="Alibaba: the pipeline's regions, the build region first")
    boot_mode: BootMode | None = Field(None, description="Alibaba: the boot mode of this bake (its key in boot_modes)")

    @field_validator("images")
    @classmethod
    def _well_formed(cls, images: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        cloud = info.data.get("cloud")
        if cloud is None:
            return images  # the cloud itself failed: that error names the field
        for region, image in images.items():
            if not is_valid_region(cloud, region):
                raise ValueError(f"{region!r} is not {EXPECTED_REGION[cloud]}")
            if not is_valid_image_id(cloud, image):
                raise ValueError(f"{region}: {image!r} is not {EXPECTED_SHAPE[cloud]}")
        return images

    @model_validator(mode="after")
    def _made_by_this_bake(self) -> ImageStackOutputs:
        """Each cloud's finished status, and ids only of what the stack's own bake made."""
        if self.cloud in FINISHED:
            field, done = FINISHED[self.cloud]
            status = getattr(self, field)
            if status != done:
                # Stack outputs are what the program computed on its last run: `pulumi refresh` alone leaves them as
                # they were (pulumi-azure-native #3522), `up --refresh` reads the bake and recomputes them.
                raise ValueError(
                    f"{field}: the bake is {status!r}, not {done!r}, so its images are not all made: wait for it, "
                    f"run `pulumi up --refresh --stack {self.stack or 'IMAGE_STACK'}`, then pin again"
                )
        if self.cloud == "aws":
            found = AWS_IMAGE_BUILD_ARN.fullmatch(self.image_arn or "")
            if found is None:
                raise ValueError(f"image_arn: {self.image_arn!r} is not an Image Builder image build version ARN: "
                                 "the AMIs are pinned only with the build that made them")
            if found["region"] not in self.images:
                raise ValueError(f"images: no AMI in the build region {found['region']} of {self.image_arn}")
            # The lock records which base each bake started from: the AMI, not a parameter that names another later.
            if not AWS_AMI.fullmatch(self.parent_image or ""):
                raise ValueError(f"parent_image: {self.parent_image!r} is not the AMI the bake started from: bake from "
                                 "the AMI `gpufleet lock resolve --only base` recorded for its parameter")
        if self.cloud == "azure":
            gallery = self.gallery_image_id or ""
            for region, image in self.images.items():
                if not (AZURE_GALLERY_VERSION.fullmatch(image) and gallery
                        and image.lower().startswith(f"{gallery.lower()}/versions/")):
                    raise ValueError(f"images.{region}: {image!r} is not a version of the stack's gallery image "
                                     f"{gallery or '(gallery_image_id missing)'}")
        if self.cloud == "alicloud":
            if not self.execution_id:
                raise ValueError("execution_id: missing: the ids are pinned only with the execution that made them")
            if not self.regions:
                raise ValueError("regions: missing: the execution is read in its build region, the first")
            for region, image in self.images.items():
                if not ALICLOUD_CUSTOM.fullmatch(image):
                    raise ValueError(f"images.{region}: {image!r} is not a custom image id (m-...): a bake makes one")
        return self


@dataclass(frozen=True)
class Pinned:
    profile: str
    cloud: str
    region: str
    image_id: str
    previous: str | None
    boot_mode: BootMode | None = None


def stack_outputs(stack: str) -> Any:
    """`pulumi stack output --json --stack STACK`, parsed; PinError when the CLI is missing or fails."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise PinError(
            "pulumi: the Pulumi CLI is not on PATH; install it, or save the outputs elsewhere with "
            f"`pulumi stack output --json --stack {stack} > outputs.json` and pass --outputs outputs.json"
        )
    done = subprocess.run(
        [pulumi, "stack", "output", "--json", "--stack", stack], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise PinError(f"--stack: `pulumi stack output --json --stack {stack}` failed: {done.stderr.strip()}")
    return parse_json(done.stdout, f"pulumi stack output --stack {stack}")


def parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise PinError(f"{source}: not JSON ({err})") from None


def validate_outputs(raw: Any, prefix: str = "outputs") -> ImageStackOutputs:
    try:
        return ImageStackOutputs.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in first["loc"])
        # A check across fields (the model's own) names its field first in the message.
        raise PinError(f"{prefix}.{where}: {message}" if where else f"{prefix}.{message}") from None


def validate_bakes(raw: Any) -> list[ImageStackOutputs]:
    """Each bake the outputs hold: one, or (Alibaba) one per boot mode under `boot_modes`, each checked as a whole
    stack's outputs (its own execution, status and ids) with the stack's profile, cloud and name."""
    if not isinstance(raw, dict) or "boot_modes" not in raw:
        return [validate_outputs(raw)]
    bakes = raw["boot_modes"]
    if not isinstance(bakes, dict) or not bakes or not set(bakes) <= set(BOOT_MODES):
        raise PinError(f"outputs.boot_modes: expected boot mode -> bake ({', '.join(BOOT_MODES)}), got {bakes!r}")
    common = {key: value for key, value in raw.items() if key != "boot_modes"}
    return [validate_outputs({**common, **bake, "boot_mode": mode} if isinstance(bake, dict) else bake,
                             f"outputs.boot_modes.{mode}")
            for mode, bake in bakes.items()]


def _round_trip() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    # Keep `null` written as `null` (ruamel's default writes an empty value).
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


def _bake_fits_the_lock(bake: ImageStackOutputs, profile: Profile, lock_name: str, stack: str, key: str) -> None:
    """Every region of the bake has an entry of its boot mode in the profile, baked by no other stack."""
    where = f"outputs.boot_modes.{bake.boot_mode}.images" if bake.boot_mode else f"outputs.{key}"
    for region in sorted(bake.images):
        entries = profile.image_entries(bake.cloud, region)
        if not entries:
            raise PinError(
                f"{where}.{region}: profile {profile.name!r} has no {bake.cloud} entry for this region in "
                f"{lock_name}; add `{region}: {{id: null, status: unbaked}}` under its images first")
        if bake.boot_mode not in entries:
            kept = "one image, with no boot mode" if None in entries else f"images for {', '.join(map(str, entries))}"
            raise PinError(f"{where}.{region}: the bake is of boot mode {bake.boot_mode or 'none'}, but profile "
                           f"{profile.name!r} keeps {kept} in {bake.cloud}/{region} ({lock_name})")
        owner = entries[bake.boot_mode].stack
        if owner not in (None, stack):
            raise PinError(f"--stack: {lock_name} has {bake.cloud}/{region} of profile {profile.name!r} baked by "
                           f"stack {owner!r}, not {stack!r}")


MadeBy = Callable[[ImageStackOutputs], dict[str, str]]
"""Alibaba: region -> image id the bake's execution made, as the execution itself names them (PinError when it
cannot be read)."""


def _made_by_the_execution(bake: ImageStackOutputs, made_by: MadeBy | None) -> None:
    """Every Alibaba id the outputs give is one the bake's own execution made: a later execution's image of the same
    name is refused."""
    if bake.cloud != "alicloud":
        return
    if made_by is None:
        raise PinError("outputs.execution_id: the images an Alibaba execution made are read from the execution")
    made = made_by(bake)
    where = f"outputs.boot_modes.{bake.boot_mode}.images" if bake.boot_mode else "outputs.images"
    for region, image in sorted(bake.images.items()):
        if made.get(region) != image:
            raise PinError(f"{where}.{region}: {image} is not an image execution {bake.execution_id} made "
                           f"(it made {made.get(region) or 'none there'})")


def pin(lock_path: Path, raw_outputs: Any, stack: str, made_by: MadeBy | None = None) -> list[Pinned]:
    """Write the ids that `stack`'s bake made (its outputs) into the lock at `lock_path`; returns what changed. An
    Alibaba stack bakes one image per boot mode: each is written to its boot mode's entry, and only ids `made_by`
    says its execution made."""
    bakes = validate_bakes(raw_outputs)
    outputs = bakes[0]  # profile, cloud and stack are the stack's, shared by its bakes
    if outputs.stack != stack:
        raise PinError(f"outputs.stack: the outputs are of stack {outputs.stack!r}, not --stack {stack!r}: pin a "
                       "bake only with the stack that made it")
    try:
        lock = load_lock(lock_path)
    except LockError as err:
        raise PinError(str(err)) from None
    if outputs.profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        raise PinError(f"outputs.profile: {outputs.profile!r} is not a profile of {lock_path.name} (known: {known})")
    profile = lock.profiles[outputs.profile]
    key = "amis" if isinstance(raw_outputs, dict) and "amis" in raw_outputs else "images"
    for bake in bakes:
        _bake_fits_the_lock(bake, profile, lock_path.name, stack, key)
        _made_by_the_execution(bake, made_by)

    yaml = _round_trip()
    text = lock_path.read_text()
    doc = yaml.load(text)
    pinned = []
    for bake in bakes:
        regions = doc["profiles"][outputs.profile]["images"][outputs.cloud]
        for region, image in sorted(bake.images.items()):
            previous = profile.image_entries(outputs.cloud, region)[bake.boot_mode].id
            pinned.append(Pinned(outputs.profile, outputs.cloud, region, image, previous, bake.boot_mode))
            parent, name = (regions[region], bake.boot_mode) if bake.boot_mode else (regions, region)
            if isinstance(parent[name], str):
                parent[name] = image
            else:
                parent[name]["id"] = image
                parent[name]["status"] = "baked"
                if bake.parent_image:
                    parent[name]["base_image"] = bake.parent_image  # which base this bake started from
    buffer = io.StringIO()
    yaml.dump(doc, buffer)

    # Validate the new lock before it replaces the old one.
    staged = lock_path.with_name(f".{lock_path.name}.pin")
    staged.write_text(buffer.getvalue())
    try:
        load_lock(staged)
    except LockError as err:
        staged.unlink()
        raise PinError(f"the pinned lock would not load: {err}") from None
    os.replace(staged, lock_path)
    return pinned
