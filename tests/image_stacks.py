"""Variants of the shipped image stacks, and the CLI's refusal of one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import libyaml_files
from conftest import SHIPPED_STACKS
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.clouds.lookup import backend

STACK = {"aws": "aws-images", "azure": "azure-images", "alicloud": "alicloud-images"}


def images_stack(tmp_path: Path, cloud: str, provider_region: str | None = None, **changes: Any) -> Path:
    """The shipped image stack of `cloud` with `changes` to its gpufleet:images (None removes a field)."""
    document = libyaml_files.load((SHIPPED_STACKS / f"Pulumi.{STACK[cloud]}.yaml").read_text())
    config = document["config"]
    for field, value in changes.items():
        if value is None:
            config["gpufleet:images"].pop(field, None)
        else:
            config["gpufleet:images"][field] = value
    if provider_region is not None:
        config[backend(cloud).region_key] = provider_region
    path = tmp_path / f"Pulumi.{cloud}-variant.yaml"
    path.write_text(libyaml_files.dump(document, sort_keys=False))
    return path


def refused(path: Path) -> str:
    """The CLI's error for a stack it must refuse: exit 2, no traceback, no plan on stdout (an error document whose
    errors are the ones printed); the printed errors with whitespace folded."""
    result = CliRunner().invoke(app, ["plan", "--stack-file", str(path), "--format", "json"])
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    assert "resources" not in document and document["exit_code"] == 2
    assert "Traceback" not in result.stderr
    return " ".join(result.stderr.split())
