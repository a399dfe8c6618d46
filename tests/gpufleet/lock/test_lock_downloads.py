"""`images check` fails every download of the lock the bake could not verify, and names the --lock file."""

from __future__ import annotations

import json
from pathlib import Path

import libyaml_files
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH

PROFILE = "cuda12.8-r580"


def _check(tmp_path: Path, change) -> tuple[int, dict, str]:
    raw = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    change(raw["profiles"][PROFILE])
    path = tmp_path / "fixture-lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    json_run = CliRunner().invoke(app, ["images", "check", "--lock", str(path), "--profile", PROFILE,
                                        "--format", "json"])
    table_run = CliRunner().invoke(app, ["images", "check", "--lock", str(path), "--profile", PROFILE])
    return json_run.exit_code, json.loads(json_run.stdout), table_run.stderr


def _fields(report: dict) -> set[str]:
    return {p["field"] for p in report["problems"]}


def test_a_url_without_a_hash_fails_naming_the_field_and_the_lock_file(tmp_path: Path) -> None:
    def drop(profile: dict) -> None:
        profile["agents"]["alicloud"]["aliyun_cli"]["sha256"] = None
    rc, report, err = _check(tmp_path, drop)
    assert rc == 1 and "agents.alicloud.aliyun_cli.sha256" in _fields(report)
    assert report["lock"] == str(tmp_path / "fixture-lock.yaml")
    assert f"{tmp_path / 'fixture-lock.yaml'}: " in err.replace("\n", "")


def test_a_signature_with_its_pinned_key_verifies_a_url(tmp_path: Path) -> None:
    # The EFA installer has no sha256, only AWS's signature: dropping the signature leaves it unverified.
    rc, report, _ = _check(tmp_path, lambda profile: None)
    assert "fabric.aws.efa_installer.sha256" not in _fields(report)

    def unsign(profile: dict) -> None:
        for key in ("signature_url", "pgp_key_url", "pgp_fingerprint"):
            profile["fabric"]["aws"]["efa_installer"].pop(key)
    rc, report, _ = _check(tmp_path, unsign)
    assert rc == 1 and "fabric.aws.efa_installer.sha256" in _fields(report)


def test_an_apt_key_without_a_fingerprint_fails(tmp_path: Path) -> None:
    def unpin(profile: dict) -> None:
        profile["agents"]["azure"]["amlfs_lustre_client"]["key_fingerprint"] = None
    rc, report, _ = _check(tmp_path, unpin)
    assert rc == 1 and "agents.azure.amlfs_lustre_client.key_fingerprint" in _fields(report)


def test_the_shipped_lock_verifies_every_download(tmp_path: Path) -> None:
    # eRDMA's sha256 (Alibaba's Enable eRDMA table) and the FSx key's fingerprint are pinned; enroot's .debs take the
    # digest GitHub lists for their release asset (`release:`), which `lock resolve` records.
    rc, report, _ = _check(tmp_path, lambda profile: None)
    # The shipped ACK stacks name the profile ACK installs (cuda12.8-r570-ack), not this one: nothing is left.
    assert rc == 0 and _fields(report) == set()


def test_a_github_download_without_its_release_fails(tmp_path: Path) -> None:
    def unpin(profile: dict) -> None:
        del profile["slurm"]["enroot"]["release"]
    rc, report, _ = _check(tmp_path, unpin)
    assert rc == 1 and _fields(report) == {"slurm.enroot.sha256"}
