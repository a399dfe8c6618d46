"""The apt reader of `gpufleet lock resolve`: a repository's InRelease verified with the lock's pinned key, its
Packages index checked against InRelease's SHA256, and each pinned package=version's index entry (Filename, Size,
SHA256) for one architecture; plus the key files a keyring package (e.g. NVIDIA's cuda-keyring) installs.

Repositories are laid out as apt reads them (sources.list(5), "Debian Repository Format" on wiki.debian.org):
`deb URL SUITE COMPONENT` reads URL/dists/SUITE/InRelease and COMPONENT/binary-ARCH/Packages below it; a flat
repository (`deb URL /`, NVIDIA's CUDA repository) reads URL/InRelease and indexes named relative to URL.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import tarfile
import zlib
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import PurePosixPath

from debian import arfile, deb822, debfile
from debian.debian_support import Version

from ..lock.facts import AptPackage, AptRepositoryFact
from .http import SourceError, get
from .openpgp import dearmor, verify_clearsigned

FLAT = "/"
# The index compressions apt reads, in the order we prefer them (smallest download first).
_DECOMPRESS = {".xz": lzma.decompress, ".gz": gzip.decompress, "": bytes}
KEYRING_FOLDERS = ("usr/share/keyrings", "etc/apt/trusted.gpg.d")


def resolve_apt_repository(url: str, suite: str, packages: Mapping[str, str], keyring: bytes, fingerprint: str,
                           architecture: str = "amd64", component: str = "main",
                           now: datetime | None = None) -> AptRepositoryFact:
    """Read `url`'s InRelease for `suite`, verify it with `keyring` (whose primary key must be `fingerprint`), check
    the Packages index for `component`/`architecture` against it and return each pin's entry. SourceError names
    what failed: the key, the signature, an index hash, or every pinned name=version the index lacks."""
    fingerprint = fingerprint.replace(" ", "").upper()
    read_at = now or datetime.now(timezone.utc)
    base = url.rstrip("/") + "/" + ("" if suite == FLAT else f"dists/{suite}/")
    in_release_url = base + "InRelease"
    in_release = get(in_release_url).body
    release = deb822.Release(verify_clearsigned(in_release, keyring, fingerprint, in_release_url))
    index_url, index = _packages_index(base, release, "" if suite == FLAT else f"{component}/binary-{architecture}/",
                                       in_release_url)
    entries = _pinned_entries(index, packages, architecture, index_url)
    return AptRepositoryFact(source=in_release_url, read_at=read_at, signed_by=fingerprint,
                             in_release_sha256=hashlib.sha256(in_release).hexdigest(), packages=entries)


def _packages_index(base: str, release: deb822.Release, folder: str, in_release_url: str) -> tuple[str, bytes]:
    """The first Packages index InRelease lists that the server has (.xz, .gz, plain), its bytes checked against
    InRelease's size and sha256, decompressed."""
    listed = {entry["name"]: entry for entry in release.get("SHA256", [])}
    candidates = [f"{folder}Packages{suffix}" for suffix in _DECOMPRESS if f"{folder}Packages{suffix}" in listed]
    if not candidates:
        raise SourceError(f"{in_release_url}: lists no {folder}Packages index in its SHA256 field; check the suite, "
                          "component and architecture the lock names")
    for name in candidates:
        index_url = base + name
        answer = get(index_url, accept_status=(200, 404))
        if answer.status == 404:  # InRelease may list an index the server does not keep (Ubuntu's plain Packages)
            continue
        expected = listed[name]
        found = hashlib.sha256(answer.body).hexdigest()
        if found != expected["sha256"].lower() or len(answer.body) != int(expected["size"]):
            raise SourceError(f"{index_url}: sha256 {found} ({len(answer.body)} bytes) does not match InRelease's "
                              f"{expected['sha256']} ({expected['size']} bytes); the mirror may be mid-sync (retry "
                              "later) or the index was altered")
        suffix = name.removeprefix(f"{folder}Packages")
        try:
            return index_url, _DECOMPRESS[suffix](answer.body)
        except (lzma.LZMAError, OSError, EOFError, zlib.error) as broken:
            raise SourceError(f"{index_url}: cannot be decompressed ({broken})") from None
    raise SourceError(f"{in_release_url}: none of the indexes it lists is served ({', '.join(candidates)})")


def _pinned_entries(index: bytes, packages: Mapping[str, str], architecture: str,
                    index_url: str) -> dict[str, AptPackage]:
    """Each pin's index entry for `architecture` (or `all`); one SourceError naming every pin that is missing."""
    wanted = set(packages)
    versions: dict[str, dict[str, set[str]]] = {name: {} for name in wanted}  # name -> version -> architectures
    found: dict[str, tuple[str, AptPackage]] = {}  # name -> (version taken, its entry)
    for entry in deb822.Packages.iter_paragraphs(io.BytesIO(index), use_apt_pkg=False):
        name, version, arch = entry.get("Package"), entry.get("Version"), entry.get("Architecture")
        if name not in wanted:
            continue
        versions[name].setdefault(version, set()).add(arch)
        # An empty pin takes the package at any version (a name that carries its version: the driver pinning
        # package): the newest listed for the architecture is recorded.
        wanted_version = packages[name] or version
        if version == wanted_version and arch in (architecture, "all") and _newer(version, found.get(name)):
            try:
                found[name] = (version, AptPackage(architecture=arch, filename=entry["Filename"],
                                                   size=int(entry["Size"]), sha256=entry["SHA256"]))
            except (KeyError, ValueError) as broken:
                raise SourceError(f"{index_url}: {name}={version} has no usable Filename, Size and SHA256 "
                                  f"({broken})") from None
    missing = [_missing_pin(name, packages[name], versions[name], architecture)
               for name in sorted(wanted) if name not in found]
    if missing:
        raise SourceError(f"{index_url}: " + "; ".join(missing))
    return {f"{name}={found[name][0]}": found[name][1] for name in packages}


def _newer(version: str, seen: tuple[str, AptPackage] | None) -> bool:
    """Whether `version` replaces the entry already taken for a name (the first for a pinned version, which is
    equal; the newest for an unversioned pin)."""
    if seen is None:
        return True
    try:
        return Version(version) > Version(seen[0])
    except ValueError:
        return False


def _missing_pin(name: str, version: str, present: dict[str, set[str]], architecture: str) -> str:
    if not present:
        return f"{name}={version}: the index has no package {name}" if version else \
            f"{name}: the index has no package {name}"
    try:
        ordered = sorted(present, key=Version)
    except ValueError:  # a version string Debian's rules cannot order: list it as text
        ordered = sorted(present)
    listed = ", ".join(f"{each} ({'/'.join(sorted(present[each]))})" for each in ordered)
    return f"{name}={version} is not there for {architecture}; the index has {name} {listed}"


def keyring_from_deb(deb: bytes) -> bytes:
    """The OpenPGP key files (*.gpg, *.asc) a keyring package installs under usr/share/keyrings or
    etc/apt/trusted.gpg.d: one file's bytes as installed, several as one binary keyring."""
    try:
        with debfile.DebFile(fileobj=io.BytesIO(deb)) as package:
            data = package.data.tgz()
            keys = {str(member.name): data.extractfile(member).read() for member in data.getmembers()
                    if member.isfile() and _is_key_file(str(member.name))}
    except (arfile.ArError, tarfile.TarError, EOFError, OSError, KeyError) as broken:
        raise SourceError(f"keyring package: not a .deb dpkg could install ({broken})") from None
    if not keys:
        raise SourceError(f"keyring package: installs no *.gpg or *.asc under {' or '.join(KEYRING_FOLDERS)}")
    if len(keys) == 1:
        return next(iter(keys.values()))
    # Binary keyrings concatenate into one; armored ones are dearmored first.
    return b"".join(dearmor(keys[name], f"keyring package: {name}") for name in sorted(keys))


def _is_key_file(member: str) -> bool:
    path = PurePosixPath(member.removeprefix("./"))
    return path.suffix in (".gpg", ".asc") and str(path.parent) in KEYRING_FOLDERS
