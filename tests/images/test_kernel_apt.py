"""kernel.sh and lustre.sh on AWS under the real apt-get, dpkg and gpg (tests/apt_sandbox.py, a signed FSx
repository from tests/local_apt_repository.py): the image keeps the base image's kernel, alone in /boot, gets that
kernel's own Lustre modules and mount.lustre, and apt refuses any other kernel, so a metapackage that pulls a newer
one (as lustre-client-modules-aws does, FSx tracking its newest build) fails the bake before the image is made.
The machine's apt (Debian's) runs the scripts; the image's own, jammy's apt 2.4, judges the pins they leave too
(tests/ubuntu_rootfs.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from apt_sandbox import AptSandbox, flat_repository, stub_dir
from conftest import REPO
from local_apt_repository import LocalAptRepositories
from ubuntu_rootfs import JAMMY_APT

from gpufleet.lock import load_lock, render_install_env

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

INSTALL = REPO / "images" / "install"
PROFILE = load_lock().profiles["cuda12.8-r580"]
KERNEL, NEWER, OLDER = "6.8.0-1015-aws", "6.8.0-1099-aws", "6.8.0-1008-aws"
LUSTRE = "2.15.6-1fsx"
PROFILE_SUITE = "jammy"  # the VM images' release (install_env VM_UBUNTU 22.04)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[LocalAptRepositories]:
    with LocalAptRepositories(tmp_path / "served") as repositories:
        yield repositories


def _kernels(*kernels: str) -> dict[str, object]:
    """Ubuntu's packages of each kernel: its image (which lays vmlinuz into /boot) and headers."""
    return {"packages": {**{f"linux-image-{k}": [f"{k.split('-')[0]}.1"] for k in kernels},
                         **{f"linux-headers-{k}": [f"{k.split('-')[0]}.1"] for k in kernels}},
            "files": {f"linux-image-{k}": {f"/boot/vmlinuz-{k}": ""} for k in kernels}}


def _world(tmp_path: Path, served: LocalAptRepositories, base: tuple[str, ...] = (KERNEL,),
           fsx_builds: tuple[str, ...] = (KERNEL, NEWER)) -> tuple[AptSandbox, Path]:
    """The builder (the base image's kernels installed), Ubuntu's archive with a newer kernel, and FSx's repository:
    modules for each kernel it builds (each depending on its kernel), lustre-client-modules-aws on the newest."""
    box = AptSandbox(tmp_path / "root")
    kernels = _kernels(KERNEL, NEWER, OLDER)
    ubuntu = flat_repository(tmp_path / "ubuntu", kernels["packages"], "Ubuntu", kernels["files"])
    (box.root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file://{ubuntu} /\n")
    modules = {f"lustre-client-modules-{k}": [LUSTRE] for k in fsx_builds}
    fsx = served.add({**modules, "lustre-client-modules-aws": [LUSTRE], "lustre-client-utils": [LUSTRE]},
                     suite=PROFILE_SUITE, depends={**{f"lustre-client-modules-{k}": f"linux-image-{k}"
                                                      for k in fsx_builds},
                                                   "lustre-client-modules-aws": f"lustre-client-modules-{NEWER}"})
    key = tmp_path / "fsx-ubuntu-public-key.asc"
    key.write_bytes(fsx.key.armored)
    env_file = tmp_path / "pins.env"
    env_file.write_text(render_install_env(PROFILE, "aws") + f"LUSTRE_CLIENT_URL={fsx.url}\n"
                        f"LUSTRE_CLIENT_KEY_URL=file://{key}\nLUSTRE_CLIENT_KEY_FINGERPRINT={fsx.key.fingerprint}\n")
    _apt(box, "update")
    _apt(box, "install", "-y", *(f"linux-image-{k}" for k in base))
    return box, env_file


def _apt(box: AptSandbox, *arguments: str) -> None:
    subprocess.run(["apt-get", *arguments], env=box.env("/usr/sbin:/usr/bin:/sbin:/bin"), capture_output=True,
                   check=True)


def _run(box: AptSandbox, env_file: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`script` (bash, in images/install with the pins in its environment) on the builder running KERNEL."""
    stubs = stub_dir(box.root.parent / "stubs", ("systemctl",), {"uname": f"echo {KERNEL}"})
    return subprocess.run(["bash", "-c", f'set -a; . "{env_file}"; set +a; cd "{INSTALL}"; {script}'],
                          env=box.env(f"{stubs}:/usr/sbin:/usr/bin:/sbin:/bin"), capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_image_keeps_its_kernel_and_gets_its_lustre_modules_and_mount_lustre(tmp_path, served):
    box, env_file = _world(tmp_path, served)
    done = _run(box, env_file, "bash kernel.sh && bash lustre.sh")
    assert done.returncode == 0, done.stderr
    installed = box.installed()
    assert {f"lustre-client-modules-{KERNEL}", "lustre-client-utils", f"linux-headers-{KERNEL}"} <= set(installed)
    assert f"linux-image-{NEWER}" not in installed and "lustre-client-modules-aws" not in installed
    assert {f"lustre-client-modules-{KERNEL}", "lustre-client-utils"} <= box.held()
    assert sorted(p.name for p in (box.root / "boot").iterdir()) == [f"vmlinuz-{KERNEL}"]
    assert (box.root / "etc/gpufleet/boot-kernel").read_text() == f"{KERNEL}\n"


def test_a_metapackage_that_pulls_a_newer_kernel_fails_the_bake(tmp_path, served):
    box, env_file = _world(tmp_path, served)
    pulled = "source common.sh; apt_install lustre-client-modules-aws"
    done = _run(box, env_file, f"bash kernel.sh && bash lustre.sh && {pulled}")
    assert done.returncode != 0
    assert f"Depends: linux-image-{NEWER} but it is not installable" in done.stdout, done.stdout + done.stderr
    assert f"linux-image-{NEWER}" not in box.installed()


def _jammy_apt(box: AptSandbox, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`arguments` (apt-get, apt-cache) as jammy's own apt runs them on the sandbox, whose folder (its root, the
    repositories) is shared into that release's tree."""
    return JAMMY_APT.run(list(arguments), box.root.parent, env=box.env("/usr/sbin:/usr/bin:/sbin:/bin"))


def test_jammys_apt_reads_the_boot_kernel_pins_as_the_bake_does(tmp_path, served):
    """apt_preferences(5): the first specific record matching a version sets its priority. kernel.sh lists the boot
    kernel's packages before the pattern that bars every kernel: the image's apt 2.4 must read them in that order."""
    box, env_file = _world(tmp_path, served)
    done = _run(box, env_file, "bash kernel.sh && bash lustre.sh")
    assert done.returncode == 0, done.stderr
    assert _jammy_apt(box, "apt-get", "--version").stdout.startswith("apt 2.4.")
    policy = _jammy_apt(box, "apt-cache", "policy", f"linux-image-{NEWER}", f"linux-headers-{KERNEL}").stdout
    newer, boot = policy.split(f"linux-headers-{KERNEL}:")
    assert "Candidate: (none)" in newer and f"{NEWER.split('-')[0]}.1 -1" in newer, policy
    assert f"Installed: {KERNEL.split('-')[0]}.1" in boot and f"{KERNEL.split('-')[0]}.1 500" in boot, policy
    pulled = _jammy_apt(box, "apt-get", "install", "-s", "-y", "lustre-client-modules-aws")
    assert pulled.returncode != 0
    assert f"Depends: linux-image-{NEWER} but it is not installable" in pulled.stdout, pulled.stdout + pulled.stderr
    own = _jammy_apt(box, "apt-get", "install", "-s", "-y", "--reinstall", f"linux-headers-{KERNEL}")
    assert own.returncode == 0 and f"Inst linux-headers-{KERNEL}" in own.stdout, own.stdout + own.stderr


def test_the_harness_shows_the_metapackage_pulls_the_newer_kernel_without_the_refusal(tmp_path, served):
    box, env_file = _world(tmp_path, served)
    # lustre.sh alone (no kernel.sh: its boot kernel written by hand), then the metapackage as today's bake takes it.
    record = f'mkdir -p "$GPUFLEET_ROOT/etc/gpufleet" && echo {KERNEL} > "$GPUFLEET_ROOT/etc/gpufleet/boot-kernel"'
    meta = "source common.sh && apt_install lustre-client-modules-aws"
    done = _run(box, env_file, f"{record} && bash lustre.sh && {meta}")
    assert done.returncode == 0, done.stderr
    assert f"linux-image-{NEWER}" in box.installed()


def test_a_kernel_fsx_built_no_modules_for_fails_naming_it(tmp_path, served):
    box, env_file = _world(tmp_path, served, fsx_builds=(NEWER,))
    done = _run(box, env_file, "bash kernel.sh && bash lustre.sh")
    assert done.returncode == 2
    assert f"FSx publishes no lustre-client-modules-{KERNEL}" in done.stderr
    assert f"linux-image-{NEWER}" not in box.installed()


def test_another_kernel_of_the_base_image_leaves_boot(tmp_path, served):
    box, env_file = _world(tmp_path, served, base=(OLDER, KERNEL))
    done = _run(box, env_file, "bash kernel.sh")
    assert done.returncode == 0, done.stderr
    assert f"linux-image-{OLDER}" not in box.installed()
    assert sorted(p.name for p in (box.root / "boot").iterdir()) == [f"vmlinuz-{KERNEL}"]
