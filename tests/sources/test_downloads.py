"""Downloads read over HTTP from a local server: the bytes' sha256 against the lock's, a key's fingerprint as gpg
reads it, and every refusal naming the URL."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

import pytest
from local_apt_repository import LocalAptRepositories
from wheel_files import wheel_bytes

from gpufleet.sources.downloads import resolve_download
from gpufleet.sources.http import SourceError

READ_AT = datetime(2026, 11, 1, tzinfo=timezone.utc)


@pytest.fixture
def server(tmp_path: Path):
    with LocalAptRepositories(tmp_path / "served") as served:
        (served.root / "files").mkdir()
        yield served


def serve(server: LocalAptRepositories, name: str, body: bytes) -> str:
    (server.root / "files" / name).write_bytes(body)
    return f"{server.url}/files/{name}"


def test_a_file_is_recorded_with_its_sha256_and_size(server) -> None:
    body = b"an installer's bytes\n" * 100
    url = serve(server, "installer-1.0.tar.gz", body)
    fact = resolve_download(url, now=READ_AT)
    assert (fact.sha256, fact.size, fact.source, fact.read_at) == (hashlib.sha256(body).hexdigest(), len(body), url,
                                                                   READ_AT)
    assert fact.key_fingerprint is None
    assert resolve_download(url, expected_sha256=fact.sha256).sha256 == fact.sha256


def test_bytes_that_differ_from_the_lock_fail_naming_both(server) -> None:
    url = serve(server, "installer-1.0.tar.gz", b"changed at the source")
    with pytest.raises(SourceError) as refused:
        resolve_download(url, expected_sha256="0" * 64)
    assert url in str(refused.value) and "the lock pins " + "0" * 64 in str(refused.value)


def test_a_key_is_read_for_its_fingerprint_and_another_key_is_refused(server) -> None:
    key, other = server.key(), server.key(name="someone else")
    url = serve(server, "vendor.asc", key.armored)
    assert resolve_download(url, key_fingerprint=key.fingerprint).key_fingerprint == key.fingerprint
    assert resolve_download(url).key_fingerprint == key.fingerprint  # a .asc is key material: recorded as read
    with pytest.raises(SourceError, match=f"holds key {key.fingerprint}, the lock pins {other.fingerprint}"):
        resolve_download(url, key_fingerprint=other.fingerprint)
    both = serve(server, "two.asc", key.armored + other.armored)
    with pytest.raises(SourceError, match="holds 2 primary keys"):
        resolve_download(both, key_fingerprint=key.fingerprint)
    with pytest.raises(SourceError, match="not OpenPGP key material"):
        resolve_download(serve(server, "broken.asc", b"not a key"), key_fingerprint=key.fingerprint)


def test_a_missing_file_fails_naming_the_url(server) -> None:
    with pytest.raises(SourceError, match=r"/files/gone\.tar\.gz: HTTP 404"):
        resolve_download(f"{server.url}/files/gone.tar.gz")



def test_a_wheels_metadata_must_say_what_the_lock_records(server) -> None:
    recorded = (">=3.10", ("requests>=2.21.0", 'typing-extensions>=4.6.0; python_version < "3.13"'))
    url = serve(server, "demo-1.0-py3-none-any.whl", wheel_bytes("demo", "1.0", *recorded))
    assert resolve_download(url, wheel_requires_pinned=recorded).sha256
    with pytest.raises(SourceError) as refused:
        resolve_download(url, wheel_requires_pinned=(">=3.10", ("requests>=2.21.0",)))
    assert str(refused.value).startswith(f"{url}: its METADATA says Requires-Python >=3.10, Requires-Dist "
                                         "['requests>=2.21.0', 'typing-extensions>=4.6.0; python_version < \"3.13\"']; "
                                         "the lock records >=3.10, ['requests>=2.21.0']")
    with pytest.raises(SourceError, match="not a wheel"):
        resolve_download(serve(server, "broken-1.0-py3-none-any.whl", b"no zip"), wheel_requires_pinned=recorded)
