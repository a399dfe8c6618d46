"""Results kept across processes (gpufleet/derived_cache.py): read back only for the same bytes, kind and code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufleet import derived_cache
from gpufleet.catalog.mig import MIG_FILE, MigFacts
from gpufleet.stackfile import validate
from gpufleet.stackfile.errors import SpecInvalid
from gpufleet.yaml_model import MAX_BYTES, load_yaml_model


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    derived_cache._own_folder.cache_clear()
    yield home / "gpufleet" / "validated"
    derived_cache._own_folder.cache_clear()


def counted(path: Path) -> tuple[list[int], object]:
    calls: list[int] = []

    def build() -> dict[str, str]:
        calls.append(1)
        return {"text": path.read_text()}

    return calls, build


def entries(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.pickle"))


def test_a_file_validated_once_is_read_back_without_validating_again(cache_home: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "mig.yaml"
    copy.write_bytes(MIG_FILE.read_bytes())
    first = load_yaml_model(copy, MigFacts)
    assert len(entries(cache_home)) == 1

    def no_validation(*args: object, **kwargs: object) -> None:
        raise AssertionError("validated again")

    monkeypatch.setattr(validate, "parse", no_validation)
    assert load_yaml_model(copy, MigFacts) == first


def test_changed_bytes_another_kind_or_other_code_make_it_again(cache_home: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("a: 1\n")
    calls, build = counted(path)
    assert derived_cache.kept("kind", path.read_bytes(), build) == {"text": "a: 1\n"}
    assert derived_cache.kept("kind", path.read_bytes(), build) == {"text": "a: 1\n"}
    assert len(calls) == 1
    path.write_text("a: 2\n")
    assert derived_cache.kept("kind", path.read_bytes(), build) == {"text": "a: 2\n"}
    derived_cache.kept("another kind", path.read_bytes(), build)
    assert len(calls) == 3
    monkeypatch.setattr(derived_cache, "code_version", lambda: "an-edited-package")
    derived_cache._own_folder.cache_clear()
    derived_cache.kept("kind", path.read_bytes(), build)
    assert len(calls) == 4


def test_a_file_that_fails_is_never_kept(cache_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "mig.yaml"
    bad.write_text("unknown_field: 1\n")
    for _ in range(2):
        with pytest.raises(SpecInvalid, match="unknown_field"):
            load_yaml_model(bad, MigFacts)
    assert entries(cache_home) == []


def test_a_damaged_entry_is_made_again_and_replaced(cache_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("a: 1\n")
    calls, build = counted(path)
    derived_cache.kept("kind", path.read_bytes(), build)
    [entry] = entries(cache_home)
    entry.write_bytes(entry.read_bytes()[:5])
    assert derived_cache.kept("kind", path.read_bytes(), build) == {"text": "a: 1\n"}
    assert derived_cache.kept("kind", path.read_bytes(), build) == {"text": "a: 1\n"}
    assert len(calls) == 2


def test_a_cache_folder_others_can_write_is_never_read(cache_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("a: 1\n")
    calls, build = counted(path)
    derived_cache.kept("kind", path.read_bytes(), build)
    cache_home.chmod(0o777)
    derived_cache._own_folder.cache_clear()
    derived_cache.kept("kind", path.read_bytes(), build)
    derived_cache.kept("kind", path.read_bytes(), build)
    assert len(calls) == 3


def test_what_is_not_a_small_regular_file_is_refused_by_the_reader_and_never_kept(cache_home: Path,
                                                                                  tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_BYTES + 1))
    for path, reason in ((big, "over the"), (tmp_path, "not a regular file")):
        with pytest.raises(SpecInvalid) as refused:
            load_yaml_model(path, MigFacts)
        assert reason in str(refused.value.errors[0].message)
    assert entries(cache_home) == []


def test_the_code_version_follows_an_edit_of_any_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "package"
    (package / "sub").mkdir(parents=True)
    module = package / "sub" / "model.py"
    module.write_text("x = 1\n")
    monkeypatch.setattr(derived_cache, "CODE", (package,))
    derived_cache.code_version.cache_clear()
    before = derived_cache.code_version()
    module.write_text("x = 22\n")
    derived_cache.code_version.cache_clear()
    try:
        assert derived_cache.code_version() != before
    finally:
        monkeypatch.undo()
        derived_cache.code_version.cache_clear()


def test_another_versions_folder_is_removed_a_day_after_it_was_last_written(cache_home: Path, tmp_path: Path) -> None:
    old, recent = cache_home / "old-version", cache_home / "recent-version"
    for folder in (old, recent):
        folder.mkdir(parents=True)
        (folder / "entry.pickle").write_bytes(b"")
    past = time.time() - derived_cache.STALE_SECONDS - 60
    os.utime(old, (past, past))
    path = tmp_path / "data.yaml"
    path.write_text("a: 1\n")
    derived_cache.kept("kind", path.read_bytes(), counted(path)[1])
    assert not old.exists() and recent.is_dir()
    assert (cache_home / derived_cache.code_version()).is_dir()


def test_commands_in_new_processes_read_back_what_the_first_kept(cache_home: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent.parent)}
    command = [sys.executable, "-m", "gpufleet", "quote", "--gpu", "H100", "--count", "16", "--format", "json"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    kept = {entry: entry.stat().st_mtime_ns for entry in entries(cache_home)}
    assert len(kept) >= 2  # the lock and at least one catalog file
    second = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert json.loads(second.stdout) == json.loads(first.stdout)
    assert {entry: entry.stat().st_mtime_ns for entry in entries(cache_home)} == kept


def test_a_manifest_parsed_once_is_read_back_without_parsing_and_its_header_still_checked(
        cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from components.kubernetes import manifests

    shutil.copy(manifests.MANIFESTS / "dcgm-exporter.yaml", tmp_path / "dcgm-exporter.yaml")
    monkeypatch.setattr(manifests, "MANIFESTS", tmp_path)
    first = manifests.read_manifest.__wrapped__("dcgm-exporter")
    assert len(entries(cache_home)) == 1

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(manifests.yaml, "load_all", no_parsing)
    assert manifests.read_manifest.__wrapped__("dcgm-exporter") == first
    # The kept objects stand for the documents only: a file that lost its header is refused all the same.
    text = (tmp_path / "dcgm-exporter.yaml").read_text()
    (tmp_path / "dcgm-exporter.yaml").write_text("\n".join(line for line in text.splitlines()
                                                           if not line.startswith("# source-commit")))
    with pytest.raises(ValueError, match="names no source repository and 40-hex commit"):
        manifests.read_manifest.__wrapped__("dcgm-exporter")
