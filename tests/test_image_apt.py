"""gpu-stack.sh under the real apt-get and dpkg (tests/apt_sandbox.py): NVIDIA's CUDA repository comes from the
pinned cuda-keyring, and every package the lock pins installs from it at exactly its pinned version.

The stand-in CUDA repository holds each pinned package at its pinned version and at a newer one, as NVIDIA's does:
an unpinned install takes the newer. The base OS repository holds a newer nvidia-open, as Ubuntu's archive carries
NVIDIA drivers: only the driver pinning package (its apt preferences) keeps the driver on NVIDIA's build.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from apt_sandbox import AptSandbox, build_deb, flat_repository, sha256, stub_dir

from components.lock import load_lock, render_install_env

GPU_STACK = Path(__file__).resolve().parents[1] / "images" / "install" / "gpu-stack.sh"
PROFILE = load_lock().profiles["cuda12.8-r580"]
DRIVER_PACKAGE_VERSION = f"{PROFILE.driver}-1"


def _newer(version: str) -> str:
    return f"9:{version.rsplit(':', 1)[-1]}"


def _world(tmp_path: Path, drop: str | None = None) -> tuple[AptSandbox, Path]:
    """The sandbox, its base OS repository, the CUDA repository and the cuda-keyring that adds it."""
    box = AptSandbox(tmp_path / "root")
    pinned = dict(PROFILE.apt)
    cuda = {name: [_newer(v)] + ([] if name == drop else [v]) for name, v in pinned.items()}
    cuda["nvidia-open"] = [DRIVER_PACKAGE_VERSION, "590.44.01-1"]  # a newer driver branch, as the repository has
    cuda[PROFILE.driver_pinning_package] = ["1.0-1"]
    # The stand-in pinning package pins the driver the way NVIDIA's describes (an apt preferences file; its real file
    # name is not known here, and apt reads only names with no extension or .pref).
    preferences = {"/etc/apt/preferences.d/nvidia-driver-pinning.pref":
                   f"Package: nvidia-open nvidia-fabricmanager\nPin: version {PROFILE.driver}-*\nPin-Priority: 1000\n"}
    repo = flat_repository(tmp_path / "cuda", cuda, "NVIDIA", {PROFILE.driver_pinning_package: preferences})
    ubuntu = flat_repository(tmp_path / "ubuntu", {"nvidia-open": ["999.0-0ubuntu1"]}, "Ubuntu")
    (box.root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file://{ubuntu} /\n")
    keyring = build_deb(tmp_path / "keyring", "cuda-keyring", PROFILE.cuda_keyring.version, {
        "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list": f"deb [trusted=yes] file://{repo} /\n"})
    pins = render_install_env(PROFILE, "aws")
    pins += f"CUDA_KEYRING_URL=file://{keyring}\nCUDA_KEYRING_SHA256={sha256(keyring)}\n"
    env_file = tmp_path / "pins.env"
    env_file.write_text(pins)
    return box, env_file


def _run(box: AptSandbox, env_file: Path, script: Path = GPU_STACK) -> subprocess.CompletedProcess[str]:
    stubs = stub_dir(box.root.parent / "stubs", ("systemctl",))
    return subprocess.run(["bash", "-c", f'set -a; . "{env_file}"; set +a; exec bash "{script}" yes'],
                          env=box.env(f"{stubs}:/usr/sbin:/usr/bin:/sbin:/bin"), capture_output=True, text=True,
                          timeout=300, check=False)


def pin_problems(box: AptSandbox) -> list[str]:
    """Every lock pin the sandbox does not hold at its exact version, from NVIDIA's build, and held."""
    installed, held = box.installed(), box.held()
    wanted = {**PROFILE.apt, "nvidia-open": DRIVER_PACKAGE_VERSION, "cuda-keyring": PROFILE.cuda_keyring.version}
    problems = [f"{name}: {installed.get(name)} installed, {version} pinned"
                for name, version in sorted(wanted.items()) if installed.get(name) != version]
    problems += [f"{name}: not held" for name in sorted({*PROFILE.apt, "nvidia-open"} - held)]
    return problems


def test_every_pinned_package_installs_at_its_version_from_nvidias_repository(tmp_path):
    box, env_file = _world(tmp_path)
    done = _run(box, env_file)
    assert done.returncode == 0, done.stderr
    assert pin_problems(box) == []


def test_a_pinned_version_missing_from_the_repository_fails_the_bake(tmp_path):
    box, env_file = _world(tmp_path, drop="libnccl2")
    done = _run(box, env_file)
    assert done.returncode != 0
    assert "Version '2.28.9-1+cuda12.9' for 'libnccl2' was not found" in done.stderr


def test_a_keyring_whose_sha256_differs_is_never_installed(tmp_path):
    box, env_file = _world(tmp_path)
    env_file.write_text(env_file.read_text() + f"CUDA_KEYRING_SHA256={'0' * 64}\n")
    done = _run(box, env_file)
    assert done.returncode != 0 and "cuda-keyring" not in box.installed()


def _mutated(tmp_path: Path, old: str, new: str) -> Path:
    text = GPU_STACK.read_text()
    assert old in text
    script = GPU_STACK.parent / f".{tmp_path.name}-gpu-stack.sh"  # beside common.sh, which it sources
    script.write_text(text.replace(old, new))
    return script


@pytest.mark.parametrize(("old", "new", "found"), [
    # unpinned: the names without their versions take the newest
    ('apt_install nvidia-open "${pins[@]}"', 'apt_install nvidia-open "${packages[@]}"', "9:"),
    # no driver pinning package: nvidia-open comes from the base OS archive
    ('apt_install "$DRIVER_PINNING_PACKAGE"\n', "", "999.0-0ubuntu1"),
])
def test_the_harness_catches_an_unpinned_or_wrong_repository_install(tmp_path, old, new, found):
    box, env_file = _world(tmp_path)
    script = _mutated(tmp_path, old, new)
    try:
        done = _run(box, env_file, script)
    finally:
        script.unlink()
    assert done.returncode == 0, done.stderr
    assert any(found in problem for problem in pin_problems(box))


def test_the_harness_catches_an_install_before_its_repository_exists(tmp_path):
    box, env_file = _world(tmp_path)
    script = _mutated(tmp_path, 'dpkg -i "$work/cuda-keyring.deb"\napt-get update\n', "apt-get update\n")
    try:
        done = _run(box, env_file, script)
    finally:
        script.unlink()
    assert done.returncode != 0
    assert "Unable to locate package nvidia-driver-pinning-580.95.05" in done.stderr
