"""The apt reader against real signed repositories (tests/local_apt_repository.py: dpkg-deb, apt-ftparchive,
gpg --clearsign) served on 127.0.0.1, verified with the real gpg and gpgv."""

from __future__ import annotations

import hashlib
import lzma
import subprocess
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from apt_sandbox import build_deb
from local_apt_repository import LocalAptRepositories, keyring_deb

from gpufleet.sources.apt import keyring_from_deb, resolve_apt_repository
from gpufleet.sources.http import SourceError
from gpufleet.sources.openpgp import primary_fingerprints

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def local_apt_repositories(tmp_path: Path) -> Iterator[LocalAptRepositories]:
    with LocalAptRepositories(tmp_path / "apt") as served:
        yield served


def _served(url: str) -> bytes:
    with urllib.request.urlopen(url) as answer:  # noqa: S310 (the local test server)
        return answer.read()


def test_a_dists_repository_resolves_to_the_served_debs(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"datacenter-gpu-manager": ["1:3.3.8", "1:3.3.9"], "nvidia-fabricmanager":
                                       ["570.124.06-1"]}, built_for={"nvidia-fabricmanager": "amd64"})

    fact = resolve_apt_repository(repo.url, repo.suite, {"datacenter-gpu-manager": "1:3.3.9",
                                                         "nvidia-fabricmanager": "570.124.06-1"},
                                  repo.key.armored, repo.key.fingerprint, now=NOW)

    assert fact.source == f"{repo.url}dists/stable/InRelease"
    assert fact.read_at == NOW and fact.signed_by == repo.key.fingerprint
    assert fact.in_release_sha256 == hashlib.sha256((repo.top / "InRelease").read_bytes()).hexdigest()
    assert list(fact.packages) == ["datacenter-gpu-manager=1:3.3.9", "nvidia-fabricmanager=570.124.06-1"]
    assert [entry.architecture for entry in fact.packages.values()] == ["all", "amd64"]
    for pin, entry in fact.packages.items():
        served = _served(repo.url + entry.filename)
        assert served == repo.debs[pin].read_bytes()
        assert (entry.size, entry.sha256) == (len(served), hashlib.sha256(served).hexdigest())


def test_a_flat_repository_resolves_with_a_binary_key(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-toolkit-12-8": ["12.8.0-1", "12.8.1-1"]}, suite="/")

    fact = resolve_apt_repository(repo.url, "/", {"cuda-toolkit-12-8": "12.8.1-1"}, repo.key.binary,
                                  repo.key.fingerprint.lower())

    assert fact.source == f"{repo.url}InRelease" and fact.signed_by == repo.key.fingerprint
    entry = fact.packages["cuda-toolkit-12-8=12.8.1-1"]
    assert entry.filename == "./cuda-toolkit-12-8_12.8.1-1_all.deb"
    served = _served(repo.url + entry.filename)
    assert served == repo.debs["cuda-toolkit-12-8=12.8.1-1"].read_bytes()
    assert (entry.size, entry.sha256) == (len(served), hashlib.sha256(served).hexdigest())
    assert fact.read_at.tzinfo is not None and abs(datetime.now(timezone.utc) - fact.read_at).total_seconds() < 60


def test_the_architecture_picks_its_own_index(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"libnvidia-nscq": ["570.124.06-1"]}, architectures=("amd64", "arm64"),
                                      built_for={"libnvidia-nscq": "arm64"})

    fact = resolve_apt_repository(repo.url, repo.suite, {"libnvidia-nscq": "570.124.06-1"}, repo.key.armored,
                                  repo.key.fingerprint, architecture="arm64")
    assert fact.packages["libnvidia-nscq=570.124.06-1"].architecture == "arm64"

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, repo.suite, {"libnvidia-nscq": "570.124.06-1"}, repo.key.armored,
                               repo.key.fingerprint, architecture="amd64")
    assert f"{repo.url}dists/stable/main/binary-amd64/Packages.xz" in str(refused.value)
    assert "libnvidia-nscq" in str(refused.value)


def test_a_missing_version_fails_naming_the_versions_there(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-drivers-570": ["570.86.15-1", "570.124.06-1", "570.133.20-1"]},
                                      suite="/", built_for={"cuda-drivers-570": "amd64"})

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, "/", {"cuda-drivers-570": "570.124.06-2"}, repo.key.armored,
                               repo.key.fingerprint)

    assert str(refused.value) == (
        f"{repo.url}Packages.xz: cuda-drivers-570=570.124.06-2 is not there for amd64; the index has "
        "cuda-drivers-570 570.86.15-1 (amd64), 570.124.06-1 (amd64), 570.133.20-1 (amd64)")


def test_a_flat_index_names_the_architectures_a_version_is_built_for(
        local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"nvidia-imex-570": ["570.124.06-1"]}, suite="/",
                                      built_for={"nvidia-imex-570": "arm64"})

    with pytest.raises(SourceError, match=r"nvidia-imex-570=570.124.06-1 is not there for amd64; the index has "
                                          r"nvidia-imex-570 570.124.06-1 \(arm64\)$"):
        resolve_apt_repository(repo.url, "/", {"nvidia-imex-570": "570.124.06-1"}, repo.key.armored,
                               repo.key.fingerprint)


def test_every_missing_pin_is_named_in_one_error(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"doca-ofed": ["2.9.1-1"], "rdma-core": ["2404mlnx51-1"]})

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, repo.suite, {"rdma-core": "2404mlnx51-1", "doca-ofed": "2.10.0-1",
                                                      "mlnx-ofed-kernel-dkms": "24.10-1"},
                               repo.key.armored, repo.key.fingerprint)

    assert str(refused.value) == (
        f"{repo.url}dists/stable/main/binary-amd64/Packages.xz: doca-ofed=2.10.0-1 is not there for amd64; the "
        "index has doca-ofed 2.9.1-1 (all); mlnx-ofed-kernel-dkms=24.10-1: the index has no package "
        "mlnx-ofed-kernel-dkms")


def test_an_inrelease_signed_by_another_key_fails(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]}, suite="/")
    repo.sign(local_apt_repositories.key(name="someone else"))

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, "/", {"cuda-keyring": "1.1-1"}, repo.key.armored, repo.key.fingerprint)

    assert str(refused.value).startswith(
        f"{repo.url}InRelease: no valid signature by the pinned key {repo.key.fingerprint} (")
    assert "No public key" in str(refused.value)


def test_an_inrelease_altered_after_signing_fails(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]})
    in_release = repo.top / "InRelease"
    in_release.write_bytes(in_release.read_bytes().replace(b"Suite: stable", b"Suite: stale"))

    with pytest.raises(SourceError, match=rf"InRelease: no valid signature by the pinned key "
                                          rf"{repo.key.fingerprint} \(BADSIG "):
        resolve_apt_repository(repo.url, repo.suite, {"cuda-keyring": "1.1-1"}, repo.key.armored,
                               repo.key.fingerprint)


def test_text_outside_the_signed_message_is_refused(local_apt_repositories: LocalAptRepositories) -> None:
    """Unsigned fields before the signed message (listing an altered index's hash) are refused, not read."""
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]}, suite="/")
    index = repo.index(suffix="").read_bytes().replace(b"Version: 1.1-1", b"Version: 1.1-2")
    repo.index().write_bytes(lzma.compress(index))
    forged = f"SHA256:\n {hashlib.sha256(repo.index().read_bytes()).hexdigest()} {repo.index().stat().st_size} " \
             "Packages.xz\n\n"
    in_release = repo.top / "InRelease"
    in_release.write_bytes(forged.encode() + in_release.read_bytes())
    with pytest.raises(SourceError, match=r"InRelease: not a clearsigned document alone \(text outside the signed "):
        resolve_apt_repository(repo.url, "/", {"cuda-keyring": "1.1-2"}, repo.key.armored, repo.key.fingerprint)

    in_release.write_bytes(in_release.read_bytes().removeprefix(forged.encode()))
    with pytest.raises(SourceError, match=r"Packages.xz: sha256 [0-9a-f]{64} \(\d+ bytes\) does not match"):
        resolve_apt_repository(repo.url, "/", {"cuda-keyring": "1.1-2"}, repo.key.armored, repo.key.fingerprint)


def test_key_material_that_is_not_the_pinned_key_is_refused(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]}, suite="/")
    other = local_apt_repositories.key(name="someone else")

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, "/", {"cuda-keyring": "1.1-1"}, other.armored, repo.key.fingerprint)
    assert str(refused.value) == (
        f"{repo.url}InRelease: the key material's primary key(s) {other.fingerprint} are not the pinned "
        f"{repo.key.fingerprint}; check the lock's fingerprint against the vendor's published one")

    # The pinned key beside another one is refused too: the keyring gpgv trusts holds the pinned key alone.
    with pytest.raises(SourceError, match=f"primary key\\(s\\) {repo.key.fingerprint}, {other.fingerprint} are not"):
        resolve_apt_repository(repo.url, "/", {"cuda-keyring": "1.1-1"}, repo.key.binary + other.binary,
                               repo.key.fingerprint)


def test_a_packages_index_altered_after_signing_fails_on_its_hash(
        local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]})
    listed = hashlib.sha256(repo.index().read_bytes()).hexdigest()
    index = repo.index(suffix="").read_bytes()
    size = next(line for line in index.decode().splitlines() if line.startswith("Size: "))
    repo.index().write_bytes(lzma.compress(index.replace(size.encode(), b"Size: 1")))
    altered = hashlib.sha256(repo.index().read_bytes()).hexdigest()

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, repo.suite, {"cuda-keyring": "1.1-1"}, repo.key.armored,
                               repo.key.fingerprint)

    message = str(refused.value)
    assert message.startswith(f"{repo.url}dists/stable/main/binary-amd64/Packages.xz: sha256 {altered} (")
    assert f"does not match InRelease's {listed} (" in message


def test_an_index_inrelease_lists_but_the_server_lacks_falls_back(
        local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]})
    repo.index(suffix=".xz").unlink()

    fact = resolve_apt_repository(repo.url, repo.suite, {"cuda-keyring": "1.1-1"}, repo.key.armored,
                                  repo.key.fingerprint)
    assert fact.packages["cuda-keyring=1.1-1"].filename == "pool/main/cuda-keyring_1.1-1_all.deb"

    for suffix in (".gz", ""):
        repo.index(suffix=suffix).unlink()
    with pytest.raises(SourceError, match=r"InRelease: none of the indexes it lists is served \(main/binary-amd64/"
                                          r"Packages.xz, main/binary-amd64/Packages.gz, main/binary-amd64/Packages\)"):
        resolve_apt_repository(repo.url, repo.suite, {"cuda-keyring": "1.1-1"}, repo.key.armored,
                               repo.key.fingerprint)


def test_a_component_the_release_does_not_list_fails(local_apt_repositories: LocalAptRepositories) -> None:
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]})

    with pytest.raises(SourceError) as refused:
        resolve_apt_repository(repo.url, repo.suite, {"cuda-keyring": "1.1-1"}, repo.key.armored,
                               repo.key.fingerprint, component="restricted")
    assert str(refused.value) == (
        f"{repo.url}dists/stable/InRelease: lists no restricted/binary-amd64/Packages index in its SHA256 field; "
        "check the suite, component and architecture the lock names")

    with pytest.raises(SourceError, match=f"^{repo.url}dists/oldstable/InRelease: HTTP 404$"):
        resolve_apt_repository(repo.url, "oldstable", {"cuda-keyring": "1.1-1"}, repo.key.armored,
                               repo.key.fingerprint)


def test_a_signature_by_a_subkey_of_the_pinned_key_passes(local_apt_repositories: LocalAptRepositories) -> None:
    key = local_apt_repositories.key(subkey=True)
    repo = local_apt_repositories.add({"cuda-keyring": ["1.1-1"]}, suite="/", key=key)
    signature = (repo.top / "InRelease").read_bytes().partition(b"-----BEGIN PGP SIGNATURE-----")[1:]
    packets = subprocess.run([*key.gpg(), "--list-packets"], input=b"".join(signature), capture_output=True,
                             check=True).stdout.decode()
    assert f"issuer fpr v4 {key.signer.rstrip('!')}" in packets and key.signer.rstrip("!") != key.fingerprint

    fact = resolve_apt_repository(repo.url, "/", {"cuda-keyring": "1.1-1"}, key.armored, key.fingerprint)
    assert fact.signed_by == key.fingerprint


def test_keyring_from_deb_reads_the_key_a_keyring_package_installs(
        local_apt_repositories: LocalAptRepositories, tmp_path: Path) -> None:
    repo = local_apt_repositories.add({"cuda-toolkit-12-8": ["12.8.1-1"]}, suite="/")
    deb = keyring_deb(tmp_path / "keyring", repo.key)

    keyring = keyring_from_deb(deb.read_bytes())

    assert keyring == repo.key.binary
    fact = resolve_apt_repository(repo.url, "/", {"cuda-toolkit-12-8": "12.8.1-1"}, keyring, repo.key.fingerprint)
    assert fact.signed_by == repo.key.fingerprint


def test_keyring_from_deb_joins_several_key_files_and_refuses_none(
        local_apt_repositories: LocalAptRepositories, tmp_path: Path) -> None:
    first, second = local_apt_repositories.key(), local_apt_repositories.key(name="second")
    deb = keyring_deb(tmp_path / "two", first, extra={"/etc/apt/trusted.gpg.d/second.asc": second.armored,
                                                      "/usr/share/doc/keys/ignored.gpg": b"not a key"})

    assert primary_fingerprints(keyring_from_deb(deb.read_bytes()), "test") == [second.fingerprint,
                                                                               first.fingerprint]

    empty = build_deb(tmp_path / "none", "no-keys", "1.0", {"/usr/share/doc/no-keys/README": "no key here"})
    with pytest.raises(SourceError, match="installs no \\*.gpg or \\*.asc under usr/share/keyrings or "
                                          "etc/apt/trusted.gpg.d"):
        keyring_from_deb(empty.read_bytes())
    with pytest.raises(SourceError, match="keyring package: not a .deb"):
        keyring_from_deb(b"not an ar archive")


def test_an_unversioned_pin_takes_the_newest_listed_and_an_absent_name_fails(
        local_apt_repositories: LocalAptRepositories) -> None:
    # The driver pinning package carries the driver in its name; the lock pins no version of it.
    repo = local_apt_repositories.add({"nvidia-driver-pinning-580.126.16": ["580.126.16-0ubuntu1", "580.126.16-1"]},
                                      suite="/")
    fact = resolve_apt_repository(repo.url, "/", {"nvidia-driver-pinning-580.126.16": ""}, repo.key.armored,
                                  repo.key.fingerprint, now=NOW)
    assert list(fact.packages) == ["nvidia-driver-pinning-580.126.16=580.126.16-1"]
    with pytest.raises(SourceError, match="nvidia-driver-pinning-580.95.05: the index has no package"):
        resolve_apt_repository(repo.url, "/", {"nvidia-driver-pinning-580.95.05": ""}, repo.key.armored,
                               repo.key.fingerprint, now=NOW)
