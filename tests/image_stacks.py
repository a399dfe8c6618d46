"""Variants of the shipped image stacks, and the CLI's refusal of one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import SHIPPED_STACKS
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.clouds.lookup import backend

STACK = {"aws": "aws-images", "azure": "azure-images", "alicloud": "alicloud-images"}


def images_stack(tmp_path: Path, cloud: str, provider_region: str | None = None, **changes: Any) -> Path:
    """The shipped image stack of `cloud` with `changes` to its gpufleet:images (None removes a field)."""
    document = yaml.safe_load((SHIPPED_STACKS / f"Pulumi.{STACK[cloud]}.yaml").read_text())
    config = document["config"]
    for field, value in changes.items():
        if value is None:
            config["gpufleet:images"].pop(field, None)
        else:
            config["gpufleet:images"][field] = value
    if provider_region is not None:
        config[backend(cloud).region_key] = provider_region
    path = tmp_path / f"Pulumi.{cloud}-variant.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def refused(path: Path) -> str:
    """The CLI's error for a stack it must refuse: exit 2, no traceback, nothing on stdout; whitespace folded."""
    result = CliRunner().invoke(app, ["plan", "--stack-file", str(path), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not result.stdout.strip().startswith("{")
    return " ".join(result.output.split())
