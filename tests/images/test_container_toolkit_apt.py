"""container-toolkit.sh under the real apt-get, dpkg and gpg (tests/apt_sandbox.py): NVIDIA's container toolkit
repository is trusted only through the key the lock pins, and its four packages install at exactly the lock's version
although the repository holds a newer one, as NVIDIA's does."""

from __future__ import annotations

import subprocess
from pathlib import Path

from apt_sandbox import AptSandbox, flat_repository, signing_key, stub_dir
from conftest import REPO

from gpufleet.lock import load_lock, render_install_env

SCRIPT = REPO / "images" / "install" / "container-toolkit.sh"
PROFILE = load_lock().profiles["cuda12.8-r580-eks1.35"]
TOOLKIT = PROFILE.kubernetes.container_toolkit if PROFILE.kubernetes else None


def _world(tmp_path: Path, drop: str | None = None, signed_by: str = "nvidia") -> tuple[AptSandbox, Path]:
    """The sandbox; NVIDIA's repository (each package at the pinned and a newer version, InRelease signed by
    `signed_by`'s key); the pins with the repository, its key file and the pinned fingerprint pointing here."""
    assert TOOLKIT is not None
    box = AptSandbox(tmp_path / "root")
    nvidia, fingerprint = signing_key("nvidia")
    signer = nvidia if signed_by == "nvidia" else signing_key(signed_by)[0]
    packages = {name: ["9:1.99.0-1"] + ([] if name == drop else [v]) for name, v in TOOLKIT.apt.items()}
    repo = flat_repository(tmp_path / "toolkit", packages, "NVIDIA")
    subprocess.run([*signer, "--clearsign", "-o", str(repo / "InRelease"), str(repo / "Release")], check=True)
    key = tmp_path / "gpgkey"
    key.write_text(subprocess.run([*nvidia, "--armor", "--export"], check=True, capture_output=True,
                                  text=True).stdout)
    pins = render_install_env(PROFILE, "aws")
    pins += (f"CONTAINER_TOOLKIT_URL=file://{repo}\nCONTAINER_TOOLKIT_KEY_URL=file://{key}\n"
             f"CONTAINER_TOOLKIT_KEY_FINGERPRINT={fingerprint}\n")
    env_file = tmp_path / "pins.env"
    env_file.write_text(pins)
    return box, env_file


def _run(box: AptSandbox, env_file: Path) -> subprocess.CompletedProcess[str]:
    log = box.root.parent / "ctk.log"
    stubs = stub_dir(box.root.parent / "stubs", ("systemctl",), {
        "snap": 'echo "Name Version Rev Tracking Publisher Notes"; echo "kubelet-eks 1.35.0 9 1.35.0/stable c -"',
        "nvidia-ctk": f'echo "nvidia-ctk $*" >> "{log}"'})
    return subprocess.run(["bash", "-c", f'set -a; . "{env_file}"; set +a; exec bash "{SCRIPT}"'],
                          env=box.env(f"{stubs}:/usr/sbin:/usr/bin:/sbin:/bin"), capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_toolkit_installs_at_its_pinned_versions_from_the_trusted_repository_and_is_held(tmp_path):
    box, env_file = _world(tmp_path)
    done = _run(box, env_file)
    assert done.returncode == 0, done.stderr
    assert TOOLKIT is not None
    installed = box.installed()
    assert {name: installed.get(name) for name in TOOLKIT.apt} == dict(TOOLKIT.apt)
    assert set(TOOLKIT.apt) <= box.held()
    calls = (tmp_path / "ctk.log").read_text().splitlines()
    assert calls == ["nvidia-ctk runtime configure --runtime=containerd --set-as-default"]


def test_a_repository_signed_by_another_key_installs_nothing(tmp_path):
    box, env_file = _world(tmp_path, signed_by="mallory")
    done = _run(box, env_file)
    assert done.returncode != 0
    assert "NO_PUBKEY" in done.stderr or "not signed" in done.stderr, done.stderr
    assert TOOLKIT is not None and not set(TOOLKIT.apt) & set(box.installed())
    assert not (tmp_path / "ctk.log").exists()


def test_a_pinned_version_missing_from_the_repository_fails_the_bake(tmp_path):
    box, env_file = _world(tmp_path, drop="libnvidia-container1")
    done = _run(box, env_file)
    assert done.returncode != 0
    assert "Version '1.20.0-1' for 'libnvidia-container1' was not found" in done.stderr
