"""load_facts: the resolved facts beside a lock (images/lock.resolved.yaml) read back as written, none when absent,
a malformed file refused naming its field; base_image_key is the key lock resolve records a base image under."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import libyaml_files
import pytest

from gpufleet.lock.facts import BaseImageFact, ResolvedFacts, base_image_key
from gpufleet.lock.facts_loader import load_facts
from gpufleet.stackfile import SpecInvalid

PATTERN = r"^ubuntu_22_04_x64_20G_alibase_[0-9]{8}\.vhd$"  # images/lock.yaml base_images.alicloud.*.bios
IMAGE = "ubuntu_22_04_x64_20G_alibase_20240926.vhd"


def test_no_resolved_file_is_no_facts(tmp_path: Path) -> None:
    facts = load_facts(tmp_path / "lock.yaml")
    assert facts == ResolvedFacts() and facts.base_images == {}


def test_recorded_base_image_reads_back_under_its_key(tmp_path: Path) -> None:
    key = base_image_key("alicloud", "cn-wulanchabu", PATTERN)
    assert key == f"alicloud/cn-wulanchabu/{PATTERN}"
    read_at = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    written = ResolvedFacts(base_images={key: BaseImageFact(
        source="ecs.DescribeImages cn-wulanchabu", read_at=read_at, image_id=IMAGE, name=IMAGE, boot_mode="BIOS")})
    (tmp_path / "lock.resolved.yaml").write_text(libyaml_files.dump(written.model_dump(mode="json", by_alias=True)))
    fact = load_facts(tmp_path / "lock.yaml").base_images[key]
    assert (fact.image_id, fact.boot_mode, fact.read_at) == (IMAGE, "BIOS", read_at)


def test_malformed_facts_name_the_field(tmp_path: Path) -> None:
    (tmp_path / "lock.resolved.yaml").write_text(
        f"schema: 1\nbase_images:\n  'alicloud/cn-wulanchabu/x':\n    source: DescribeImages\n    read_at: "
        f"2026-11-02T09:30:00Z\n    image: {IMAGE}\n")
    with pytest.raises(SpecInvalid) as invalid:
        load_facts(tmp_path / "lock.yaml")
    fields = {error.path for error in invalid.value.errors}
    assert {"base_images.alicloud/cn-wulanchabu/x.image_id", "base_images.alicloud/cn-wulanchabu/x.image"} <= fields
