"""`gpufleet lock resolve` end to end against real counterparts on 127.0.0.1: a signed apt repository
(apt-ftparchive, gpg), a file server, Debian's docker-registry with images pushed by skopeo. What a run records, what
it names when a source refuses, what a second run calls moved, and the command's file and exit codes."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import libyaml_files
import pytest
from local_apt_repository import LocalAptRepositories
from local_registry import local_registry, push_image
from local_tls import local_tls
from typer.testing import CliRunner
from wheel_files import wheel_bytes

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH
from gpufleet.lock.facts import ResolvedFacts, resolved_path
from gpufleet.lock.facts_loader import load_facts
from gpufleet.lock.needs import FLAT, AptNeed, DownloadNeed, ImageNeed, apt_key
from gpufleet.lock_resolve import resolve

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=timezone.utc)
PROFILE = "cuda12.8-r580"


def serve(server: LocalAptRepositories, path: str, body: bytes) -> str:
    target = server.root / "files" / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(body)
    return f"{server.url}/files/{path}"


def test_a_run_records_each_kind_names_each_refusal_and_sees_what_moved(tmp_path: Path) -> None:
    with LocalAptRepositories(tmp_path / "apt") as server, local_registry(tmp_path / "registry") as registry:
        repo = server.add({"libnccl2": ["2.28.9-1+cuda12.9"], "nvidia-driver-pinning-580.126.16": ["580.126.16-1"]},
                          suite=FLAT)
        key_url = serve(server, "repo.asc", repo.key.armored)
        installer = serve(server, "installer-1.0.tar.gz", b"installer bytes")
        image = push_image(registry, tmp_path / "work", "nvidia/driver", "580.126.16-ubuntu24.04", ["linux/amd64"])
        pins = (("libnccl2", "2.28.9-1+cuda12.9"), ("nvidia-driver-pinning-580.126.16", ""))
        needs = [AptNeed(apt_key(repo.url, FLAT), ("profiles.p.apt",), repo.url, FLAT, pins, repo.key.fingerprint,
                         key_url),
                 AptNeed(apt_key(repo.url + "missing/", FLAT), ("profiles.q.apt",), repo.url, FLAT,
                         (("libnccl2", "2.26.2-1+cuda12.8"),), repo.key.fingerprint, key_url),
                 DownloadNeed(installer, ("profiles.p.fabric.aws.efa_installer.sha256",), installer),
                 ImageNeed(image.reference, ("kubernetes_components.gpu_operator.images.driver",), image.reference)]
        first = resolve(needs, ResolvedFacts(), NOW)

        assert list(first.failed) == ["profiles.q.apt"]
        assert "libnccl2=2.26.2-1+cuda12.8 is not there for amd64" in first.failed["profiles.q.apt"]
        assert "2.28.9-1+cuda12.9" in first.failed["profiles.q.apt"]
        recorded = first.facts.apt[needs[0].key]
        assert set(recorded.packages) == {"libnccl2=2.28.9-1+cuda12.9",
                                          "nvidia-driver-pinning-580.126.16=580.126.16-1"}
        assert first.facts.downloads[installer].sha256 == hashlib.sha256(b"installer bytes").hexdigest()
        assert first.facts.images[image.reference].digest == image.digest
        assert set(first.moved.values()) == {"first read"} and len(first.moved) == 3

        # Read again later: nothing moved. A new image behind the tag moves; changed bytes of a versioned file fail.
        assert resolve(needs[:1] + needs[2:], first.facts, NOW).moved == {}
        pushed = push_image(registry, tmp_path / "work2", "nvidia/driver", "580.126.16-ubuntu24.04",
                            ["linux/amd64", "linux/arm64"])
        serve(server, "installer-1.0.tar.gz", b"other bytes under the same name")
        later = resolve(needs[2:], first.facts, NOW)
        assert later.moved == {f"images: {image.reference}": "changed at its source"}
        assert later.facts.images[image.reference].digest == pushed.digest != image.digest
        assert "recorded 2026-11-28 as" in later.failed["profiles.p.fabric.aws.efa_installer.sha256"]
        assert later.facts.downloads[installer] == first.facts.downloads[installer]  # the record keeps the first read


def mirrored_lock(tmp_path: Path, server: LocalAptRepositories) -> Path:
    """The shipped lock, its profile's download URLs pointing at the local server, which serves bytes made here
    for each (and one test key for every key URL); each pinned sha256 and fingerprint is what is served."""
    raw = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    key = server.key()
    profile = copy.deepcopy(raw["profiles"][PROFILE])

    def mirror(url: str, body: bytes) -> str:
        parts = urlsplit(url)
        return serve(server, f"{parts.netloc}{parts.path}", body)

    def component(entry: dict[str, Any]) -> None:
        if entry.get("key_url"):
            entry["key_url"], entry["key_fingerprint"] = mirror(entry["key_url"], key.armored), key.fingerprint
            return
        if entry.get("release"):  # the sha256 GitHub lists for the release asset (the REST API's shape)
            body, name = f"bytes of {entry['url']}".encode(), entry["url"].rsplit("/", 1)[1]
            asset = {"name": name, "digest": f"sha256:{hashlib.sha256(body).hexdigest()}"}
            entry["url"] = mirror(entry["url"], body)
            entry["release"] = mirror(f"{entry['release']}/{name}", json.dumps({"assets": [asset]}).encode())
            return
        if entry.get("url"):
            body = f"bytes of {entry['url']}".encode()
            entry["url"], entry["sha256"] = mirror(entry["url"], body), hashlib.sha256(body).hexdigest()
            entry.pop("unconfirmed", None)
        if entry.get("signature_url"):
            entry["signature_url"] = mirror(entry["signature_url"], b"a detached signature")
            entry["pgp_key_url"], entry["pgp_fingerprint"] = mirror(entry["pgp_key_url"], key.armored), key.fingerprint

    component(profile["cuda_keyring"])
    wheel = b"a wheel"
    profile["nodecheck"] = {**profile["nodecheck"], "nvidia_ml_py_sha256": hashlib.sha256(wheel).hexdigest(),
                            "nvidia_ml_py_url": mirror(profile["nodecheck"]["nvidia_ml_py_url"], wheel)}
    for section in ("fabric", "agents"):
        for components in profile[section].values():
            for entry in components.values():
                component(entry)
    # Slurm's repositories (their keys), downloads (enroot, pyxis) and the power program's wheels.
    for name, entry in profile["slurm"].items():
        if name == "power_sdk":  # wheels whose METADATA says what the lock records, as lock resolve checks
            for wheels in entry.values():
                for wheel in wheels:
                    body = wheel_bytes(wheel["name"], wheel["version"], wheel.get("requires_python"),
                                       wheel.get("requires_dist", []))
                    wheel["url"], wheel["sha256"] = mirror(wheel["url"], body), hashlib.sha256(body).hexdigest()
        elif isinstance(entry, dict):
            component(entry)
    raw["profiles"] = {PROFILE: profile}
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    return path


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An https:// server (the lock's URLs are https) whose test CA the reader trusts through SSL_CERT_FILE."""
    context, authority = local_tls(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(authority))
    with LocalAptRepositories(tmp_path / "served", tls=context) as served:
        yield served


def test_the_command_writes_the_record_checks_it_and_names_a_changed_file(tmp_path: Path, server) -> None:
    lock = mirrored_lock(tmp_path, server)
    runner = CliRunner()
    stacks = tmp_path / "no-stacks"
    stacks.mkdir()
    base = ["lock", "resolve", "--lock", str(lock), "--only", "downloads", "--stacks-dir", str(stacks)]
    done = runner.invoke(app, [*base, "--format", "json"])
    report = json.loads(done.stdout)
    assert done.exit_code == 0, done.output
    assert report["failed"] == {} and report["read"] == report["needs"] > 10
    facts = load_facts(lock)
    assert report["written"] == str(resolved_path(lock)) and len(facts.downloads) == report["needs"]
    keys = [fact for fact in facts.downloads.values() if fact.key_fingerprint]
    assert keys and all(fact.key_fingerprint == keys[0].key_fingerprint for fact in keys)

    written = resolved_path(lock).read_bytes()
    checked = runner.invoke(app, [*base, "--check"])
    assert checked.exit_code == 0 and "nothing written (--check)" in checked.stdout
    assert resolved_path(lock).read_bytes() == written

    wheel_url = libyaml_files.load(lock.read_text())["profiles"][PROFILE]["nodecheck"]["nvidia_ml_py_url"]
    (server.root / "files" / urlsplit(wheel_url).path.split("/files/", 1)[1]).write_bytes(b"another wheel")
    changed = runner.invoke(app, [*base, "--check"])
    assert changed.exit_code == 1
    assert f"error: profiles.{PROFILE}.nodecheck.nvidia_ml_py_sha256: {wheel_url}: its bytes hash to" in changed.output


def test_base_images_resolve_through_the_default_clients_and_a_missing_cloud_names_its_field(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_public_parameters import publish, register
    from moto import mock_aws

    from gpufleet.lock import load_lock
    from gpufleet.lock.needs import BaseNeed, lock_needs
    from gpufleet.sources import aws

    for name in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "AZURE_SUBSCRIPTION_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ALIBABA_CLOUD_CREDENTIALS_FILE", "/nonexistent")
    needs = [need for need in lock_needs(load_lock()) if isinstance(need, BaseNeed)]
    aws_needs = [need for need in needs if need.cloud == "aws"]
    with mock_aws():
        ec2 = aws.default_ec2_client("us-east-1")
        for need in aws_needs:
            publish(need.reference.removeprefix("ssm:"), register(ec2, f"ubuntu for {need.key}"), need.region, NOW)
        run = resolve(needs, ResolvedFacts(), NOW)
    assert {key for key in run.facts.base_images} == {need.key for need in aws_needs}
    assert all(fact.image_id.startswith("ami-") for fact in run.facts.base_images.values())
    # Azure and Alibaba Cloud without credentials: each base image names its field and why, nothing is recorded.
    others = {need.fields[0] for need in needs if need.cloud != "aws"}
    assert set(run.failed) == others and others


def test_acks_cluster_version_is_read_once_a_run_and_its_add_ons_are_read_for_it(monkeypatch) -> None:
    # The orchestration only: the readers themselves run against recorded SDK answers in tests/sources.
    from gpufleet.lock.facts import ManagedVersionFact
    from gpufleet.lock.needs import managed_needs
    from gpufleet.sources import alicloud

    asked: list[str] = []

    def version(cs: object, region: str, minor: str, now: datetime) -> ManagedVersionFact:
        asked.append(minor)
        return ManagedVersionFact(source="cs:DescribeKubernetesVersionMetadata", read_at=now,
                                  version=f"{minor}.5-aliyun.1")

    def addons(cs: object, region: str, cluster: str, names: list[str],
               now: datetime) -> dict[str, ManagedVersionFact]:
        return {name: ManagedVersionFact(source=f"cs:ListAddons {cluster}", read_at=now, version="v1.0.0")
                for name in names}

    monkeypatch.setattr(alicloud, "default_cs_client", lambda region: object())
    monkeypatch.setattr(alicloud, "ack_kubernetes_version", version)
    monkeypatch.setattr(alicloud, "ack_addon_versions", addons)
    run = resolve(managed_needs("ack", "1.36", ("terway-eniip", "ack-arms-prometheus"), "cn-beijing", True),
                  ResolvedFacts(), NOW)
    assert asked == ["1.36"] and run.failed == {}
    assert {fact.source for key, fact in run.facts.managed.items() if "/addon/" in key} == {
        "cs:ListAddons 1.36.5-aliyun.1"}
