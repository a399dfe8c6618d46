"""gpu-stack.sh under the real apt-get and dpkg (tests/apt_sandbox.py): NVIDIA's CUDA repository comes from the
pinned cuda-keyring, and every package the lock pins installs from it at exactly its pinned version.

The stand-in CUDA repository holds each pinned package at its pinned version and at a newer one, as NVIDIA's does:
an unpinned install takes the newer. The base OS repository holds a newer nvidia-open, as Ubuntu's archive carries
NVIDIA drivers: only the driver pinning package (its apt preferences) keeps the driver on NVIDIA's build.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from apt_sandbox import AptSandbox, build_deb, flat_repository, sha256, stub_dir
from conftest import REPO

from gpufleet.lock import load_lock, render_install_env

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

GPU_STACK = REPO / "images" / "install" / "gpu-stack.sh"
PROFILE = load_lock().profiles["cuda12.8-r580"]
DRIVER_PACKAGE_VERSION = f"{PROFILE.driver}-1"
KERNEL = "5.15.0-1089-azure"  # the kernel the image boots, as kernel.sh recorded it
RUNNING = "6.8.0-1041-azure"  # what the stand-in uname -r says the build VM runs (Azure: not the boot kernel)
# The stand-in dkms builds what `dkms autoinstall -k K` asks for once the driver is in, and reports it built for K.
DKMS = (f'if [[ $1 == autoinstall ]]; then echo "$3" >> "$GPUFLEET_ROOT/dkms-built"; exit 0; fi\n'
        f'[[ "$*" == "status -m nvidia -v {PROFILE.driver} -k {KERNEL}" ]] || exit 0\n'
        f'dpkg-query --admindir="$DPKG_ADMINDIR" -W nvidia-open >/dev/null 2>&1 || exit 0\n'
        f'grep -qx {KERNEL} "$GPUFLEET_ROOT/dkms-built" 2>/dev/null || exit 0\n'
        f'echo "nvidia/{PROFILE.driver}, {KERNEL}, x86_64: installed"')


def _newer(version: str) -> str:
    return f"9:{version.rsplit(':', 1)[-1]}"


def _world(tmp_path: Path, drop: str | None = None, locking: bool = False,
           cloud: str = "aws") -> tuple[AptSandbox, Path]:
    """The sandbox, its base OS repository (with the running kernel's headers), the CUDA repository and the
    cuda-keyring that adds it."""
    box = AptSandbox(tmp_path / "root", locking)
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
    (box.root / "etc/gpufleet").mkdir(parents=True)
    (box.root / "etc/gpufleet/boot-kernel").write_text(f"{KERNEL}\n")  # kernel.sh ran first
    (box.root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file://{ubuntu} /\n")
    keyring = build_deb(tmp_path / "keyring", "cuda-keyring", PROFILE.cuda_keyring.version, {
        "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list": f"deb [trusted=yes] file://{repo} /\n"})
    pins = render_install_env(PROFILE, cloud)
    pins += f"CUDA_KEYRING_URL=file://{keyring}\nCUDA_KEYRING_SHA256={sha256(keyring)}\n"
    env_file = tmp_path / "pins.env"
    env_file.write_text(pins)
    return box, env_file


def _command(box: AptSandbox, env_file: Path, script: Path, dkms: str) -> tuple[list[str], dict[str, str]]:
    stubs = stub_dir(box.root.parent / "stubs", ("systemctl",), {"uname": f"echo {RUNNING}", "dkms": dkms})
    return (["bash", "-c", f'set -a; . "{env_file}"; set +a; exec bash "{script}" yes'],
            box.env(f"{stubs}:/usr/sbin:/usr/bin:/sbin:/bin"))


def _run(box: AptSandbox, env_file: Path, script: Path = GPU_STACK,
         dkms: str = DKMS) -> subprocess.CompletedProcess[str]:
    command, env = _command(box, env_file, script, dkms)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def _start(box: AptSandbox, env_file: Path) -> subprocess.Popen[str]:
    """The GPU stack script running, its output (stderr joined) readable as it is written."""
    command, env = _command(box, env_file, GPU_STACK, DKMS)
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


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
    """A changed gpu-stack.sh in a copy of images/install (it sources common.sh beside it). Never in the checkout:
    the image bundle packs every file there, and a plan made meanwhile in another test worker would carry it."""
    text = GPU_STACK.read_text()
    assert old in text
    install = shutil.copytree(GPU_STACK.parent, tmp_path / "install")
    script = install / GPU_STACK.name
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
    done = _run(box, env_file, _mutated(tmp_path, old, new))
    assert done.returncode == 0, done.stderr
    assert any(found in problem for problem in pin_problems(box))


def test_the_harness_catches_an_install_before_its_repository_exists(tmp_path):
    box, env_file = _world(tmp_path)
    script = _mutated(tmp_path, 'apt_install "$work/cuda-keyring.deb"\napt_get update\n', "apt_get update\n")
    done = _run(box, env_file, script)
    assert done.returncode != 0
    assert "Unable to locate package nvidia-driver-pinning-580.126.16" in done.stderr


def test_the_driver_is_built_for_the_kernel_the_image_boots_not_the_running_one(tmp_path):
    box, env_file = _world(tmp_path)
    done = _run(box, env_file)
    assert done.returncode == 0, done.stderr
    assert (box.root / "dkms-built").read_text().split() == [KERNEL]


def test_a_module_dkms_did_not_build_for_the_running_kernel_fails_the_bake(tmp_path):
    box, env_file = _world(tmp_path)
    done = _run(box, env_file, dkms="exit 0")  # dkms lists no module
    assert done.returncode == 2
    assert f"the nvidia {PROFILE.driver} module is not installed for kernel {KERNEL}" in done.stderr


def test_the_bake_waits_for_a_held_dpkg_lock_instead_of_failing(tmp_path):
    box, env_file = _world(tmp_path, locking=True)
    # Another apt holds dpkg's lock from before the script starts until apt-get in it says it is waiting, then
    # lets go: the script must wait and finish, not fail (released on apt's own words, not after a guessed time).
    holder = box.hold_dpkg_lock(300)
    said: list[str] = []
    try:
        run = _start(box, env_file)
        reader = threading.Thread(target=lambda: said.extend(iter(lambda: run.stdout.read(1), "")), daemon=True)
        reader.start()
        deadline = time.monotonic() + 120
        while "Waiting for cache lock" not in "".join(said) and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        holder.kill()
        holder.wait()
    assert run.wait(timeout=300) == 0, "".join(said)
    reader.join(timeout=10)
    assert "Waiting for cache lock" in "".join(said)
    assert pin_problems(box) == []


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_the_image_starts_persistenced_in_persistence_mode_and_azure_loads_peermem(tmp_path, cloud):
    box, env_file = _world(tmp_path, cloud=cloud)
    done = _run(box, env_file)
    assert done.returncode == 0, done.stderr
    # /etc/systemd/system overrides the packaged unit (--no-persistence-mode, no [Install]: enable did nothing).
    unit = (box.root / "etc/systemd/system/nvidia-persistenced.service").read_text()
    assert "--persistence-mode" in unit.split("ExecStart=", 1)[1].splitlines()[0]
    assert "WantedBy=multi-user.target" in unit.split("[Install]", 1)[1]
    peermem = box.root / "etc/modules-load.d/nvidia-peermem.conf"
    assert (peermem.read_text() == "nvidia-peermem\n") if cloud == "azure" else not peermem.exists()
