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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML

from .image_ids import AWS_REGION, EXPECTED_SHAPE, is_valid_image_id
from .loader import LockError, load_lock


class PinError(ValueError):
    """The outputs or the lock cannot be pinned; the message names the field (exit 2)."""


class ImageStackOutputs(BaseModel):
    """The outputs of an image stack (components/clouds/aws/images_stack.py) that pinning reads."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    profile: str = Field(..., min_length=1)
    cloud: Literal["aws"]
    amis: dict[str, str] = Field(..., min_length=1, description="region -> AMI id of the bake")

    @field_validator("amis")
    @classmethod
    def _well_formed(cls, amis: dict[str, str]) -> dict[str, str]:
        for region, ami in amis.items():
            if not AWS_REGION.match(region):
                raise ValueError(f"{region!r} is not an AWS region name")
            if not is_valid_image_id("aws", ami):
                raise ValueError(f"{region}: {ami!r} is not {EXPECTED_SHAPE['aws']}")
        return amis


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
        where = ".".join(str(part) for part in first["loc"]) or "<root>"
        raise PinError(f"outputs.{where}: {first['msg'].removeprefix('Value error, ')}") from None


def _round_trip() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    # Keep `null` written as `null` (ruamel's default writes an empty value).
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


def pin(lock_path: Path, raw_outputs: Any) -> list[Pinned]:
    """Write the outputs' ids into the lock at `lock_path`; returns what changed, by region."""
    outputs = validate_outputs(raw_outputs)
    try:
        lock = load_lock(lock_path)
    except LockError as err:
        raise PinError(str(err)) from None
    if outputs.profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        raise PinError(f"outputs.profile: {outputs.profile!r} is not a profile of {lock_path.name} (known: {known})")
    entries = lock.profiles[outputs.profile].images.get(outputs.cloud, {})
    missing = sorted(set(outputs.amis) - set(entries))
    if missing:
        raise PinError(
            f"outputs.amis.{missing[0]}: profile {outputs.profile!r} has no {outputs.cloud} entry for this "
            f"region in {lock_path.name}; add `{missing[0]}: {{id: null, status: unbaked}}` under its images first"
        )

    yaml = _round_trip()
    text = lock_path.read_text()
    doc = yaml.load(text)
    target = doc["profiles"][outputs.profile]["images"][outputs.cloud]
    pinned = []
    for region, ami in sorted(outputs.amis.items()):
        pinned.append(Pinned(outputs.profile, outputs.cloud, region, ami, entries[region].id))
        if isinstance(target[region], str):
            target[region] = ami
        else:
            target[region]["id"] = ami
            target[region]["status"] = "baked"
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
