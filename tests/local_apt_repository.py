"""Signed apt repositories served over HTTP on 127.0.0.1, built with the real tools: empty .debs from dpkg-deb
(apt_sandbox.build_deb), Packages and Release from `apt-ftparchive`, InRelease from `gpg --clearsign` with a key
generated here. For tests of anything that reads a repository as apt does (`gpufleet lock resolve`).

    @pytest.fixture
    def repositories(tmp_path):
        with LocalAptRepositories(tmp_path / "apt") as served:
            yield served

    def test_x(repositories):
        repo = repositories.add({"cuda-toolkit-12-8": ["12.8.1-1"]}, suite="/")
        resolve_apt_repository(repo.url, repo.suite, {...}, repo.key.armored, repo.key.fingerprint)

A repository is a `dists/` one (URL/dists/SUITE/InRelease, COMPONENT/binary-ARCH/Packages, debs under pool/) or,
with suite "/", a flat one as NVIDIA's CUDA repository is (InRelease, Packages and the debs at URL's top).
"""

from __future__ import annotations

import functools
import gzip
import lzma
import shutil
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from apt_sandbox import build_deb

FLAT = "/"


@dataclass(frozen=True)
class SigningKey:
    """An ed25519 key in its own GNUPGHOME: `fingerprint` is the primary key's, `signer` what `gpg -u` signs with
    (a subkey's fingerprint and "!" when the key signs with a subkey), `armored` the public key as a key_url serves
    it, `binary` as a keyring .deb installs it."""

    home: Path
    fingerprint: str
    signer: str
    armored: bytes
    binary: bytes

    def gpg(self) -> list[str]:
        return ["gpg", "--batch", "--quiet", "--homedir", str(self.home)]


def signing_key(home: Path, name: str = "gpufleet test repository", subkey: bool = False) -> SigningKey:
    """A fresh key generated in `home` (a short path: gpg-agent's socket lives there); with `subkey`, a signing
    subkey that signs in place of the primary key."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    gpg = ["gpg", "--batch", "--quiet", "--homedir", str(home)]
    subprocess.run([*gpg, "--passphrase", "", "--quick-gen-key", f"{name} <repo@example.com>", "ed25519", "sign",
                    "1d"], check=True, capture_output=True)
    primary = _fingerprints(gpg)[0]
    signer = primary
    if subkey:
        subprocess.run([*gpg, "--passphrase", "", "--quick-add-key", primary, "ed25519", "sign", "1d"], check=True,
                       capture_output=True)
        signer = _fingerprints(gpg)[1] + "!"  # "!": this subkey exactly, not the newest one gpg would choose
    armored = subprocess.run([*gpg, "--armor", "--export", primary], check=True, capture_output=True).stdout
    binary = subprocess.run([*gpg, "--export", primary], check=True, capture_output=True).stdout
    return SigningKey(home, primary, signer, armored, binary)


def _fingerprints(gpg: list[str]) -> list[str]:
    """Fingerprints of the keyring's primary key and subkeys, in the order gpg lists them."""
    listing = subprocess.run([*gpg, "--with-colons", "--list-keys"], check=True, capture_output=True, text=True)
    return [line.split(":")[9] for line in listing.stdout.splitlines() if line.startswith("fpr:")]


@dataclass
class LocalAptRepository:
    """A repository as served: `url` and `suite` are what a sources.list line (and the lock) name, `key` the key
    the lock pins, `folder` where its files lie (to alter one after signing), `debs` the served .deb for each
    'name=version' (per architecture when several are built, 'name=version:arch')."""

    url: str
    suite: str
    component: str
    folder: Path
    key: SigningKey
    debs: dict[str, Path] = field(default_factory=dict)

    @property
    def top(self) -> Path:
        """Where InRelease lies."""
        return self.folder if self.suite == FLAT else self.folder / "dists" / self.suite

    def index(self, architecture: str = "amd64", suffix: str = ".xz") -> Path:
        """The Packages index file for an architecture ('.xz', '.gz' or '' for plain)."""
        folder = self.top if self.suite == FLAT else self.top / self.component / f"binary-{architecture}"
        return folder / f"Packages{suffix}"

    def sign(self, key: SigningKey) -> None:
        """(Re)write InRelease as `key` clearsigns Release; the repository still reports its own `key` as pinned."""
        (self.top / "InRelease").unlink(missing_ok=True)
        subprocess.run([*key.gpg(), "--digest-algo", "SHA256", "--local-user", key.signer, "--clearsign", "--output",
                        str(self.top / "InRelease"), str(self.top / "Release")], check=True, capture_output=True)


class LocalAptRepositories:
    """Repositories under `root` (made if missing), served by one HTTP server on 127.0.0.1 (a free port) until
    close(), or the end of a `with` block."""

    def __init__(self, root: Path, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: serve https:// (tests/local_tls.py) instead of http://."""
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self._homes = Path(tempfile.mkdtemp(prefix="gpgtest-"))  # short: a socket path holds at most 107 bytes
        self._keys: list[SigningKey] = []
        handler = functools.partial(_QuietFiles, directory=str(root))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def key(self, subkey: bool = False, name: str = "gpufleet test repository") -> SigningKey:
        """A new signing key (kept until close())."""
        made = signing_key(self._homes / str(len(self._keys)), name, subkey)
        self._keys.append(made)
        return made

    def add(self, packages: Mapping[str, Sequence[str]], suite: str = "stable", component: str = "main",
            architectures: Sequence[str] = ("amd64",), built_for: Mapping[str, str] | None = None,
            files: Mapping[str, dict[str, str | bytes]] | None = None, key: SigningKey | None = None,
            depends: Mapping[str, str] | None = None) -> LocalAptRepository:
        """A signed repository holding each name at each listed version, built for `built_for[name]` (default
        'all'), with `files[name]` inside and `depends[name]` its Depends; indexed for `architectures`, signed with
        `key` (default: a new one)."""
        folder = self.root / f"repo{len(list(self.root.iterdir()))}"
        repository = LocalAptRepository(f"{self.url}/{folder.name}/", suite, component, folder, key or self.key())
        pool = folder if suite == FLAT else folder / "pool" / component
        build = self.root / f".{folder.name}-build"
        pool.mkdir(parents=True)
        for name, versions in packages.items():
            architecture = (built_for or {}).get(name, "all")
            for version in versions:
                deb = build_deb(build, name, version, (files or {}).get(name), architecture,
                                (depends or {}).get(name))
                repository.debs[f"{name}={version}"] = deb.rename(pool / deb.name)
        shutil.rmtree(build, ignore_errors=True)
        if suite == FLAT:
            _write_index(folder, _ftparchive(folder, "packages", "."))
        else:
            for architecture in architectures:
                scanned = _ftparchive(folder, "--arch", architecture, "packages", f"pool/{component}")
                _write_index(repository.top / component / f"binary-{architecture}", scanned)
        release = _ftparchive(repository.top, *_release_fields(suite, component, architectures), "release", ".")
        (repository.top / "Release").write_bytes(release)
        repository.sign(repository.key)
        return repository

    def __enter__(self) -> LocalAptRepositories:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        for made in self._keys:  # the gpg-agent each key's generation started
            subprocess.run(["gpgconf", "--homedir", str(made.home), "--kill", "gpg-agent"], capture_output=True)
        shutil.rmtree(self._homes, ignore_errors=True)


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


def _ftparchive(cwd: Path, *arguments: str) -> bytes:
    return subprocess.run(["apt-ftparchive", *arguments], cwd=cwd, check=True, capture_output=True).stdout


def _write_index(folder: Path, packages: bytes) -> None:
    """Packages as apt repositories serve it: plain, .gz and .xz."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Packages").write_bytes(packages)
    (folder / "Packages.gz").write_bytes(gzip.compress(packages, mtime=0))
    (folder / "Packages.xz").write_bytes(lzma.compress(packages))


def _release_fields(suite: str, component: str, architectures: Sequence[str]) -> list[str]:
    fields = {"Origin": "gpufleet-tests", "Label": "gpufleet-tests", "Architectures": " ".join(architectures)}
    if suite != FLAT:
        fields |= {"Suite": suite, "Codename": suite, "Components": component}
    return [argument for name, value in fields.items()
            for argument in ("-o", f"APT::FTPArchive::Release::{name}={value}")]


def keyring_deb(folder: Path, key: SigningKey, name: str = "test-archive-keyring",
                extra: dict[str, str | bytes] | None = None) -> Path:
    """A keyring package as NVIDIA's cuda-keyring is built: the binary key at /usr/share/keyrings/NAME.gpg (plus
    `extra` files, path -> content)."""
    files: dict[str, str | bytes] = {f"/usr/share/keyrings/{name}.gpg": key.binary, **(extra or {})}
    return build_deb(folder, name, "1.0-1", files)
