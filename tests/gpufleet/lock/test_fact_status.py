"""Which facts the lock needs, and how a record of reads backs them: unresolved, different, stale, or fine."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from pathlib import Path

import libyaml_files
import pytest
from resolved_facts import READ_AT, record, write_beside

from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock
from gpufleet.lock.fact_status import fact_findings
from gpufleet.lock.facts import ResolvedFacts
from gpufleet.lock.facts_loader import load_facts
from gpufleet.lock.needs import AptNeed, DownloadNeed, ImageNeed, lock_needs

NOW = READ_AT + timedelta(days=1)


def test_the_shipped_locks_needs_cover_pins_keys_images_and_bases() -> None:
    lock = load_lock()
    needs = lock_needs(lock)
    cuda = [n for n in needs if isinstance(n, AptNeed) and "compute/cuda/repos" in n.url]
    for profile in (p for p in lock.profiles.values() if p.baked):  # an ACK-installed one needs nothing
        repo = next(n for n in cuda if n.keyring_deb == profile.cuda_keyring.url)
        assert (profile.driver_pinning_package, "") in repo.packages
        assert set(profile.apt.items()) <= set(repo.packages)
    fsx_key = next(n for n in needs if isinstance(n, DownloadNeed) and n.url.endswith("fsx-ubuntu-public-key.asc"))
    assert fsx_key.fields[0].endswith("agents.aws.lustre_client.key_fingerprint")
    pins = lock.kubernetes_components
    assert {n.reference for n in needs if isinstance(n, ImageNeed)} == {
        image.image for _, pin in pins for image in pin.images.values()}
    assert any(n.key.startswith("aws/us-east-1/ssm:/aws/service/canonical/") for n in needs)


def test_nothing_recorded_is_unresolved_with_the_command_that_reads_it() -> None:
    needs = lock_needs(load_lock())
    found = fact_findings(needs, ResolvedFacts(), NOW)
    assert len(found) == len(needs) and {f.status for f in found} == {"unresolved"}
    apt = next(f for f in found if f.section == "apt")
    assert "`gpufleet lock resolve --only apt`" in apt.message


def test_a_full_record_leaves_nothing_and_an_old_one_is_stale() -> None:
    needs = lock_needs(load_lock())
    assert fact_findings(needs, record(needs), NOW) == []
    old = fact_findings(needs, record(needs), READ_AT + timedelta(days=91))
    assert {f.status for f in old} == {"stale"} and "over 90 days ago" in old[0].message


def test_a_read_that_contradicts_the_lock_is_different() -> None:
    needs = lock_needs(load_lock())
    facts = record(needs)
    keyring = next(n for n in needs if isinstance(n, DownloadNeed) and n.url.endswith("cuda-keyring_1.1-1_all.deb"))
    changed = facts.downloads[keyring.key].model_copy(update={"sha256": "0" * 64})
    repo = next(n for n in needs if isinstance(n, AptNeed) and n.keyring_deb)
    missing = facts.apt[repo.key].model_copy(update={"packages": {}})
    facts = facts.model_copy(update={"downloads": {**facts.downloads, keyring.key: changed},
                                     "apt": {**facts.apt, repo.key: missing}})
    found = {f.key: f for f in fact_findings(needs, facts, NOW)}
    assert found[keyring.key].status == "different" and "the lock pins " + keyring.sha256 in found[keyring.key].message
    assert found[repo.key].status == "different"
    assert "nvidia-fabricmanager=" in found[repo.key].message and "nvidia-driver-pinning-" in found[repo.key].message


@pytest.fixture
def lock_copy(tmp_path: Path) -> Path:
    path = tmp_path / "lock.yaml"
    path.write_text(DEFAULT_LOCK_PATH.read_text())
    return path


def test_a_recorded_digest_completes_a_tag_only_pin_and_a_cited_one_stays(lock_copy: Path) -> None:
    before = load_lock(lock_copy).kubernetes_components
    unpinned = dict(before.unconfirmed())
    nfd_key = next(key for key, pin in unpinned.items() if "node-feature-discovery" in pin.image)
    cited = before.dcgm_exporter.images["dcgm-exporter"]
    needs = [n for n in lock_needs(load_lock(lock_copy)) if isinstance(n, ImageNeed)]
    write_beside(lock_copy, record(needs))
    after = load_lock(lock_copy)
    assert after.resolved.images  # the record travels with the lock
    nfd = after.kubernetes_components.node_feature_discovery.images["node-feature-discovery"]
    assert nfd.digest == after.resolved.images[nfd.image].digest
    assert "read 2026-11-20 by gpufleet lock resolve" in nfd.digest_source
    assert nfd.reference == f"{nfd.image}@{nfd.digest}"
    assert nfd_key not in dict(after.kubernetes_components.unconfirmed())
    assert after.kubernetes_components.dcgm_exporter.images["dcgm-exporter"] == cited


def test_the_written_record_reads_back_equal_and_sorted(lock_copy: Path) -> None:
    needs = lock_needs(load_lock(lock_copy))
    facts = record(needs)
    path = write_beside(lock_copy, facts)
    assert path.name == "lock.resolved.yaml"
    assert load_facts(lock_copy) == facts
    raw = libyaml_files.load(path.read_text())
    assert list(raw["downloads"]) == sorted(raw["downloads"])
    again = copy.deepcopy(path.read_text())
    write_beside(lock_copy, load_facts(lock_copy))
    assert path.read_text() == again


def test_no_record_reads_as_nothing_read(tmp_path: Path) -> None:
    assert load_facts(tmp_path / "lock.yaml") == ResolvedFacts()
    assert datetime.now(timezone.utc) > READ_AT


def test_images_check_fails_on_a_record_that_contradicts_the_lock_and_notes_the_unread(lock_copy: Path) -> None:
    import json

    from typer.testing import CliRunner

    from gpufleet.cli import app

    needs = lock_needs(load_lock(lock_copy))
    facts = record(needs)
    wheel = next(n for n in needs if isinstance(n, DownloadNeed) and n.url.endswith(".whl"))
    changed = facts.downloads[wheel.key].model_copy(update={"sha256": "1" * 64})
    write_beside(lock_copy, facts.model_copy(update={"downloads": {wheel.key: changed}}))
    done = CliRunner().invoke(app, ["images", "check", "--lock", str(lock_copy), "--format", "json"])
    report = json.loads(done.stdout)
    assert done.exit_code == 1
    contradicted = [p for p in report["problems"] if p["profile"] == "resolved"]
    assert [p["field"] for p in contradicted] == [wheel.fields[0]]
    assert f"the lock pins {wheel.sha256}" in contradicted[0]["message"]
    unread = {n["field"] for n in report["notes"] if n["profile"] == "resolved"}
    # The record kept only the wheel's download: every other download is unread, the base images were read.
    keyring = next(n for n in needs if isinstance(n, DownloadNeed) and n.url.endswith("cuda-keyring_1.1-1_all.deb"))
    assert keyring.fields[0] in unread and wheel.fields[0] not in unread
    assert "base_images.aws.us-east-1" not in unread
