"""gpufleet/catalog/ack.yaml: what ACK offers GPU node pools, each list with its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.catalog.ack import ACK_FILE, instance_family, load_ack_facts
from gpufleet.stackfile import SpecInvalid


def test_the_shipped_file_names_a_source_for_each_list() -> None:
    facts = load_ack_facts()
    assert ACK_FILE.name == "ack.yaml"
    for listed in (facts.drivers, facts.cgpu, facts.erdma):
        assert facts.source(listed).startswith("ACK docs")
    assert "535.161.07" in facts.drivers.versions  # ACK's default driver for 1.28 and later


def test_every_catalog_family_is_judged_for_cgpu() -> None:
    from gpufleet.catalog import load_catalog

    families = {instance_family(t.name) for t in load_catalog().instances("alicloud")}
    assert families == set(load_ack_facts().cgpu.families)


@pytest.mark.parametrize(("name", "family"), [
    ("ecs.gn7i-c8g1.2xlarge", "gn7i"), ("ecs.ebmgn8v.48xlarge", "ebmgn8v"), ("ecs.gn8is-8x.32xlarge", "gn8is"),
])
def test_instance_family(name: str, family: str) -> None:
    assert instance_family(name) == family


@pytest.mark.parametrize(("version", "runs"), [("1.20", True), ("1.36", True), ("1.19", False)])
def test_the_erdma_controller_minimum(version: str, runs: bool) -> None:
    assert load_ack_facts().erdma.runs_on(version) is runs


def test_a_list_with_an_unknown_source_names_it(tmp_path: Path) -> None:
    text = ACK_FILE.read_text(encoding="utf-8").replace("  source: ack-erdma", "  source: nowhere")
    path = tmp_path / "ack.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecInvalid) as invalid:
        load_ack_facts(path)
    assert "nowhere" in str(invalid.value.errors)
