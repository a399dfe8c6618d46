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

from .image_ids import (
    ALICLOUD_CUSTOM,
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
                raise ValueError(
                    f"{field}: the bake is {status!r}, not {done!r}, so its images are not all made: wait for it, "
                    "run `pulumi refresh` on the image stack, then pin again"
                )
        if self.cloud == "aws":
            found = AWS_IMAGE_BUILD_ARN.fullmatch(self.image_arn or "")
            if found is None:
                raise ValueError(f"image_arn: {self.image_arn!r} is not an Image Builder image build version ARN: "
                                 "the AMIs are pinned only with the build that made them")
            if found["region"] not in self.images:
                raise ValueError(f"images: no AMI in the build region {found['region']} of {self.image_arn}")
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


def validate_outputs(raw: Any) -> ImageStackOutputs:
    try:
        return ImageStackOutputs.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in first["loc"])
        # A check across fields (the model's own) names its field first in the message.
        raise PinError(f"outputs.{where}: {message}" if where else f"outputs.{message}") from None


def _round_trip() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    # Keep `null` written as `null` (ruamel's default writes an empty value).
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


def pin(lock_path: Path, raw_outputs: Any, stack: str) -> list[Pinned]:
    """Write the ids that `stack`'s bake made (its outputs) into the lock at `lock_path`; returns what changed."""
    outputs = validate_outputs(raw_outputs)
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
    entries = lock.profiles[outputs.profile].images.get(outputs.cloud, {})
    missing = sorted(set(outputs.images) - set(entries))
    if missing:
        key = "amis" if isinstance(raw_outputs, dict) and "amis" in raw_outputs else "images"
        raise PinError(
            f"outputs.{key}.{missing[0]}: profile {outputs.profile!r} has no {outputs.cloud} entry for this "
            f"region in {lock_path.name}; add `{missing[0]}: {{id: null, status: unbaked}}` under its images first"
        )

    foreign = sorted(r for r in outputs.images if entries[r].stack not in (None, stack))
    if foreign:
        raise PinError(f"--stack: {lock_path.name} has {outputs.cloud}/{foreign[0]} of profile {outputs.profile!r} "
                       f"baked by stack {entries[foreign[0]].stack!r}, not {stack!r}")

    yaml = _round_trip()
    text = lock_path.read_text()
    doc = yaml.load(text)
    target = doc["profiles"][outputs.profile]["images"][outputs.cloud]
    pinned = []
    for region, image in sorted(outputs.images.items()):
        pinned.append(Pinned(outputs.profile, outputs.cloud, region, image, entries[region].id))
        if isinstance(target[region], str):
            target[region] = image
        else:
            target[region]["id"] = image
            target[region]["status"] = "baked"
            if outputs.parent_image:
                target[region]["base_image"] = outputs.parent_image  # which base this bake started from
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
