"""A copy of the shipped image lock, changed for one test and made the default every reader takes, with the facts
`gpufleet lock resolve` would record beside it (images/lock.resolved.yaml, written through the real model)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import libyaml_files
import pytest

from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock, loader
from gpufleet.lock.facts import BaseImageFact, ResolvedFacts, base_image_key, resolved_path

REGION = "cn-wulanchabu"
# Public image names of each series as cited in images/lock.yaml base_images.alicloud (a public image's id is its name).
UEFI_BASE = "ubuntu_22_04_uefi_x64_20G_alibase_20240807.vhd"
BIOS_BASE = "ubuntu_22_04_x64_20G_alibase_20240926.vhd"
RECORDED = {"uefi": (UEFI_BASE, "UEFI"), "bios": (BIOS_BASE, "BIOS")}


def base_fact(image_id: str, boot_mode: str | None) -> BaseImageFact:
    return BaseImageFact(source=f"ecs.DescribeImages {REGION} ImageOwnerAlias=system", image_id=image_id,
                         name=image_id, boot_mode=boot_mode, read_at=datetime(2026, 11, 2, 9, 30, tzinfo=UTC))


def recorded_facts(recorded: dict[str, tuple[str, str | None]] = RECORDED) -> ResolvedFacts:
    """Facts for the shipped lock's Alibaba base images: boot mode -> (image id, the BootMode DescribeImages gave)."""
    lock = load_lock(DEFAULT_LOCK_PATH)
    facts = {}
    for mode, (image_id, boot_mode) in recorded.items():
        pattern = lock.base_image_entry("alicloud", REGION, mode).name_regex
        facts[base_image_key("alicloud", REGION, pattern)] = base_fact(image_id, boot_mode)
    return ResolvedFacts(base_images=facts)


def use_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[dict], Any] | None = None,
             facts: ResolvedFacts | None = None) -> Path:
    """Write the shipped lock (after `change` edits its raw mapping) and `facts` beside it; every reader takes it."""
    raw = copy.deepcopy(libyaml_files.load(DEFAULT_LOCK_PATH.read_text()))
    if change is not None:
        change(raw)
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw, sort_keys=False))
    if facts is not None:
        resolved_path(path).write_text(libyaml_files.dump(facts.model_dump(mode="json", by_alias=True)))
    monkeypatch.setattr(loader.load_lock, "__defaults__", (path,))
    return path
