"""A GitHub release asset read against the digest GitHub lists for it (tests/data/sources/github: a release answer
in the REST API's shape, served from 127.0.0.1 with the assets' bytes), and the lock's enroot .debs through it: an
unread digest is a note for `images check` and a refusal of the bake; a read one is the sha256 the bake checks."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path

import libyaml_files
import pytest
from conftest import REPO
from local_apt_repository import LocalAptRepositories
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock, render_install_env
from gpufleet.lock.facts import ResolvedFacts
from gpufleet.lock.needs import DownloadNeed, profile_needs
from gpufleet.lock_resolve import resolve, write_facts
from gpufleet.sources.github_releases import resolve_release_asset
from gpufleet.sources.http import SourceError

READ_AT = datetime(2026, 11, 28, tzinfo=timezone.utc)
ANSWER = REPO / "tests/data/sources/github/enroot-release-v4.1.2.json"
RELEASE_PATH = "repos/NVIDIA/enroot/releases/tags/v4.1.2"
PROFILE = "cuda12.8-r580"


@pytest.fixture
def github(tmp_path: Path):
    """The recorded release answer at its API path and each asset's bytes under releases/download/, as GitHub serves
    them; yields (server, the release's API URL, the download URL of a name)."""
    with LocalAptRepositories(tmp_path / "served") as server:
        release = server.root / "files" / RELEASE_PATH
        release.parent.mkdir(parents=True)
        release.write_text(ANSWER.read_text())
        downloads = server.root / "files/download"
        downloads.mkdir()
        for asset in json.loads(ANSWER.read_text())["assets"]:
            (downloads / asset["name"]).write_bytes(f"{asset['name']} stand-in\n".encode())
        yield server, f"{server.url}/files/{RELEASE_PATH}", lambda name: f"{server.url}/files/download/{name}"


def digest_of(name: str) -> str:
    asset = next(asset for asset in json.loads(ANSWER.read_text())["assets"] if asset["name"] == name)
    return asset["digest"].removeprefix("sha256:")


def test_an_asset_is_recorded_with_the_digest_github_lists(github) -> None:
    _, release, download = github
    name = "enroot+caps_4.1.2-1_amd64.deb"
    fact = resolve_release_asset(download(name.replace("+", "%2B")), release, now=READ_AT)
    assert (fact.sha256, fact.read_at) == (digest_of(name), READ_AT)
    assert fact.published is not None and fact.published.sha256 == digest_of(name)
    assert fact.published.source == f"{release} assets[name={name}].digest"


def test_bytes_other_than_the_published_asset_are_refused(github) -> None:
    server, release, download = github
    (server.root / "files/download/enroot_4.1.2-1_amd64.deb").write_bytes(b"a mirror's other file")
    with pytest.raises(SourceError, match=f"GitHub lists {digest_of('enroot_4.1.2-1_amd64.deb')} for the asset"):
        resolve_release_asset(download("enroot_4.1.2-1_amd64.deb"), release)


def test_an_asset_without_a_digest_or_missing_from_the_release_is_named(github) -> None:
    _, release, download = github
    with pytest.raises(SourceError, match="asset enroot-4.1.2.tar.gz.old has no sha256 digest"):
        resolve_release_asset(download("enroot-4.1.2.tar.gz.old"), release)
    with pytest.raises(SourceError, match="lists no asset enroot_9.9.9-1_amd64.deb"):
        resolve_release_asset(download("enroot_9.9.9-1_amd64.deb"), release)


def test_the_shipped_lock_leaves_enroots_sha256_to_the_release_unread() -> None:
    """Offline: no `images check` failure, a note naming the unread fact, and no sha256 for the bake to check."""
    checked = CliRunner().invoke(app, ["images", "check", "--profile", PROFILE, "--format", "json", "--on",
                                       READ_AT.date().isoformat()])
    report = json.loads(checked.stdout)
    assert (checked.exit_code, report["problems"]) == (0, [])
    notes = {note["field"] for note in report["notes"]}
    assert {f"profiles.{PROFILE}.slurm.enroot.sha256", f"profiles.{PROFILE}.slurm.enroot_caps.sha256"} <= notes
    pins = render_install_env(load_lock().profiles[PROFILE], "aws")
    assert "ENROOT_URL=" in pins and "ENROOT_SHA256" not in pins and "ENROOT_CAPS_SHA256" not in pins


def test_a_resolved_release_digest_is_the_sha256_the_bake_checks(github, tmp_path: Path) -> None:
    _, release, download = github
    raw = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    slurm = copy.deepcopy(raw["profiles"][PROFILE]["slurm"])
    for name, asset in (("enroot", "enroot_4.1.2-1_amd64.deb"), ("enroot_caps", "enroot+caps_4.1.2-1_amd64.deb")):
        slurm[name].update(url=download(asset), release=release)
    raw["profiles"] = {PROFILE: {**raw["profiles"][PROFILE], "slurm": slurm}}
    lock = tmp_path / "lock.yaml"
    lock.write_text(libyaml_files.dump(raw))

    needs = [need for need in profile_needs(load_lock(lock).profiles[PROFILE])
             if isinstance(need, DownloadNeed) and need.release]
    assert [need.fields[0] for need in needs] == [f"profiles.{PROFILE}.slurm.enroot.sha256",
                                                  f"profiles.{PROFILE}.slurm.enroot_caps.sha256"]
    run = resolve(needs, ResolvedFacts(), now=READ_AT)
    assert run.failed == {} and run.read == 2
    write_facts(lock, run.facts)

    pins = render_install_env(load_lock(lock).profiles[PROFILE], "aws")
    assert f"ENROOT_SHA256={digest_of('enroot_4.1.2-1_amd64.deb')}\n" in pins
    assert f"ENROOT_CAPS_SHA256={digest_of('enroot+caps_4.1.2-1_amd64.deb')}\n" in pins
