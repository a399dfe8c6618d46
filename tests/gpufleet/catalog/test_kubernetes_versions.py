"""The Kubernetes version table: what it offers per cloud, its validation, and what it tells a stack on a day."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gpufleet.catalog.kubernetes_versions import VERSIONS_FILE, load_kubernetes_versions
from gpufleet.stackfile import SpecInvalid


def test_aws_offers_the_shipped_stacks_version_newest_first() -> None:
    table = load_kubernetes_versions()
    offered = table.offered("aws")
    assert offered[0] == "1.35" and offered == sorted(offered, key=lambda v: int(v.split(".")[1]), reverse=True)
    assert table.offered("alicloud") == ["1.36", "1.35", "1.34"]  # ACK offers even and odd minors since 1.31


def test_aks_dates_match_the_aks_calendar() -> None:
    table = load_kubernetes_versions()
    assert table.offered("azure") == ["1.36", "1.35", "1.34", "1.33", "1.32"]
    version = table.of("azure", "1.36")
    assert version is not None
    # AKS GA Jun 2026, end of life Jun 2027, LTS end of life Jun 2028: the last day of each month.
    assert (version.released, version.standard_support_ends, version.extended_support_ends) == (
        date(2026, 6, 1), date(2027, 6, 30), date(2028, 6, 30))


def test_aks_1_34_is_warned_about_in_its_last_month() -> None:
    version = load_kubernetes_versions().of("azure", "1.34")
    assert version is not None
    warning = version.support_warning("azure", date(2026, 11, 25))
    assert warning is not None and "Kubernetes 1.34 on azure" in warning and "2026-11-30 (in 5 days)" in warning


def test_1_35_dates_match_the_eks_calendar() -> None:
    version = load_kubernetes_versions().of("aws", "1.35")
    assert version is not None
    assert (version.standard_support_ends, version.extended_support_ends) == (date(2027, 3, 27), date(2028, 3, 27))


def test_every_entry_names_a_source_the_file_describes() -> None:
    table = load_kubernetes_versions()
    assert all(v.source in table.sources for listed in table.versions.values() for v in listed)


@pytest.mark.parametrize(("today", "words"), [
    (date(2026, 11, 25), None),
    (date(2027, 1, 25), None),                                  # 61 days out: not yet
    (date(2027, 1, 26), "standard support ends on 2027-03-27 (in 60 days)"),
    (date(2027, 3, 27), "standard support ended on 2027-03-27"),
    (date(2028, 3, 27), "extended support ended on 2028-03-27"),
])
def test_support_warning_by_day(today: date, words: str | None) -> None:
    warning = load_kubernetes_versions().of("aws", "1.35").support_warning("aws", today)
    assert warning is None if words is None else words in warning


def _table(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "versions.yaml"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize(("entry", "words"), [
    ('{version: "1.35", released: 2026-01-28, standard_support_ends: 2025-03-27, extended_support_ends: 2028-03-27, '
     "source: s}", "released < standard_support_ends"),
    ('{version: "1.35", released: 2026-01-28, standard_support_ends: 2027-03-27, extended_support_ends: 2028-03-27, '
     "source: nowhere}", "not a key of sources"),
    ('{version: "v1.35", released: 2026-01-28, standard_support_ends: 2027-03-27, extended_support_ends: '
     "2028-03-27, source: s}", "versions.aws[0].version"),
])
def test_a_malformed_table_names_the_field(tmp_path: Path, entry: str, words: str) -> None:
    path = _table(tmp_path, f"sources: {{s: somewhere}}\nversions:\n  aws:\n    - {entry}\n")
    with pytest.raises(SpecInvalid) as invalid:
        load_kubernetes_versions(path)
    assert words in str(invalid.value)


def test_the_shipped_file_is_the_default() -> None:
    assert VERSIONS_FILE.name == "kubernetes_versions.yaml" and VERSIONS_FILE.exists()


@pytest.mark.parametrize(("version", "today", "words"), [
    ("1.34", date(2026, 11, 25), "support ended on 2026-09-30 and the cloud sells no extended support"),
    ("1.35", date(2026, 12, 29), None),                         # 61 days out: not yet
    ("1.35", date(2026, 12, 30), "support ends on 2027-02-28 (in 60 days), with no extended support"),
    ("1.36", date(2026, 11, 25), None),
])
def test_ack_versions_have_no_extended_support(version: str, today: date, words: str | None) -> None:
    row = load_kubernetes_versions().of("alicloud", version)
    assert row is not None and row.extended_support_ends is None
    warning = row.support_warning("alicloud", today)
    assert warning is None if words is None else words in warning
