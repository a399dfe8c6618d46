"""A sandbox root for running install scripts under the real apt-get and dpkg (reusable for any script).

Nothing is stubbed on the package path: apt-get resolves with its own solver and pins (APT_CONFIG points it at
the sandbox's etc/apt, lists and dpkg status), and dpkg installs for real under the sandbox root (DPKG_ROOT and
DPKG_ADMINDIR, which dpkg >= 1.21 reads, and DPkg::Options for the dpkg that apt-get runs). Repositories are local
file:// directories laid out as the repository they stand for (NVIDIA's CUDA repository is a flat one: Packages
and Release at its top, `deb URL /`), holding empty packages built here with dpkg-deb. Installing for real, not
`apt-get -s`, is what lets a later step see what an earlier one did: a keyring package's sources list, a pinning
package's preferences, holds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class AptSandbox:
    def __init__(self, root: Path, locking: bool = False) -> None:
        """locking: apt and dpkg take their locks under the sandbox (var/lib/dpkg/lock-frontend...), so a test can
        hold one; off by default, so parallel tests never wait on each other."""
        self.root = root
        for folder in ("etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/apt.conf.d",
                       "etc/apt/trusted.gpg.d", "var/lib/dpkg/info", "var/lib/dpkg/updates",
                       "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/log"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        (root / "var/lib/dpkg/status").touch()
        self.admindir = root / "var/lib/dpkg"
        self.config = root / "apt.conf"
        self.config.write_text(
            f'Dir "{root}/";\n'
            f'Dir::State::status "{self.admindir}/status";\n'
            'APT::Sandbox::User "root";\n'
            f'Debug::NoLocking "{str(not locking).lower()}";\n'
            'Acquire::Languages "none";\n'
            'APT::Architecture "amd64";\n'
            'APT::Architectures { "amd64"; };\n'
            f'DPkg::Options {{ "--root={root}"; "--admindir={self.admindir}"; "--force-not-root"; '
            f'"--force-script-chrootless"; "--log={root}/var/log/dpkg.log"; }};\n'
        )

    def env(self, path: str) -> dict[str, str]:
        """The environment a script runs in: the real apt-get, apt-mark and dpkg aimed at the sandbox."""
        return {"PATH": path, "APT_CONFIG": str(self.config), "DPKG_ROOT": str(self.root),
                "DPKG_ADMINDIR": str(self.admindir), "GPUFLEET_ROOT": str(self.root),
                "HOME": str(self.root), "DEBIAN_FRONTEND": "noninteractive"}

    def hold_dpkg_lock(self, seconds: float) -> subprocess.Popen[str]:
        """Another apt run (unattended-upgrades at boot) holding dpkg's frontend lock as apt takes it (fcntl), for
        `seconds` from when this returns; needs locking=True to mean anything. wait() on it before the test ends."""
        holder = subprocess.Popen(
            ["python3", "-c", "import fcntl, sys, time\nf = open(sys.argv[1], 'w')\nfcntl.lockf(f, fcntl.LOCK_EX)\n"
             "print('held', flush=True)\ntime.sleep(float(sys.argv[2]))", str(self.admindir / "lock-frontend"),
             str(seconds)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        return holder

    def installed(self) -> dict[str, str]:
        """Package -> version of everything dpkg installed in the sandbox."""
        done = subprocess.run(["dpkg-query", f"--admindir={self.admindir}", "-W", "-f", "${Package} ${Version}\n"],
                              capture_output=True, text=True, check=True)
        return dict(line.split(" ", 1) for line in done.stdout.splitlines())

    def held(self) -> set[str]:
        done = subprocess.run(["dpkg", f"--admindir={self.admindir}", "--get-selections"], capture_output=True,
                              text=True, check=True)
        return {line.split()[0] for line in done.stdout.splitlines() if line.split()[1] == "hold"}


def build_deb(out: Path, name: str, version: str, files: dict[str, str | bytes] | None = None,
              architecture: str = "all", depends: str | None = None) -> Path:
    """An empty package (or one holding `files`, path -> text or bytes) for `architecture`, built with dpkg-deb;
    `depends`: its Depends field (a metapackage that pulls another)."""
    tree = out / f"{name}_{version}_{architecture}".replace(":", "%")
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN/control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: {architecture}\n"
        + (f"Depends: {depends}\n" if depends else "")
        + f"Maintainer: gpufleet tests <t@example.com>\nDescription: empty stand-in for {name}\n"
    )
    for path, text in (files or {}).items():
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text) if isinstance(text, bytes) else target.write_text(text)
    deb = out / f"{tree.name}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)],
                   capture_output=True, check=True)
    return deb


def flat_repository(folder: Path, packages: dict[str, list[str]], origin: str,
                    files: dict[str, dict[str, str]] | None = None, depends: dict[str, str] | None = None) -> Path:
    """A flat repository (`deb file://FOLDER /`) with Packages and Release at its top, holding each name at each
    listed version (with `files[name]` inside and `depends[name]` its Depends where given)."""
    folder.mkdir(parents=True, exist_ok=True)
    build = folder.parent / f".{folder.name}-build"
    for name, versions in packages.items():
        for version in versions:
            deb = build_deb(build, name, version, (files or {}).get(name), depends=(depends or {}).get(name))
            deb.rename(folder / f"{name}_{version.replace(':', '%')}_all.deb")
    scanned = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=folder, capture_output=True,
                             text=True, check=True).stdout
    (folder / "Packages").write_text(scanned)
    digest = hashlib.sha256(scanned.encode()).hexdigest()
    (folder / "Release").write_text(
        f"Origin: {origin}\nLabel: {origin}\nArchitectures: amd64 all\n"
        f"SHA256:\n {digest} {len(scanned.encode())} Packages\n"
    )
    return folder


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stub_dir(folder: Path, names: tuple[str, ...], scripts: dict[str, str] | None = None) -> Path:
    """Commands outside the package path (systemctl) as no-ops, first on PATH; `scripts` gives some a bash body."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in {*names, *(scripts or {})}:
        (folder / name).write_text(f"#!/bin/bash\n{(scripts or {}).get(name, 'exit 0')}\n")
        os.chmod(folder / name, 0o755)
    return folder


# The GNUPGHOMEs of the keys made in this process: generating a key starts a gpg-agent there, which signs for the
# test and would outlive it (a daemon per key, left running after the run); stopped when the session ends.
AGENT_HOMES: list[Path] = []


def stop_gpg_agents() -> None:
    """Stop the gpg-agent of every key this process made and remove its home (tests/conftest.py, at the session's
    end)."""
    for home in AGENT_HOMES:
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)
    AGENT_HOMES.clear()


def signing_key(name: str) -> tuple[list[str], str]:
    """A fresh RSA signing key in its own GNUPGHOME: the gpg command line that uses it, and its fingerprint (for
    InRelease files a test signs with `--clearsign`). The home is a short temporary folder, not the test's tmp_path:
    gpg-agent's sockets live in it and a socket path holds at most 107 bytes, which an xdist worker's tmp_path with a
    four-digit run number exceeds (S.gpg-agent.browser under .../pytest-1006/popen-gw2/<test>/gpg-microsoft)."""
    home = Path(tempfile.mkdtemp(prefix=f"gpg-{name}-"))  # mode 0700, as gpg wants its home
    AGENT_HOMES.append(home)
    gpg = ["gpg", "--batch", "--quiet", "--homedir", str(home)]
    subprocess.run([*gpg, "--passphrase", "", "--quick-gen-key", f"{name} <t@example.com>", "rsa2048", "sign", "1d"],
                   check=True, capture_output=True)
    listing = subprocess.run([*gpg, "--with-colons", "--list-keys"], check=True, capture_output=True, text=True)
    return gpg, next(line.split(":")[9] for line in listing.stdout.splitlines() if line.startswith("fpr:"))
