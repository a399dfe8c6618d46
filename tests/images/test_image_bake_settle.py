"""install.sh settles the builder VM before any install: it waits for cloud-init, gives every apt (the vendor
installers' own apt-get too) a dpkg lock timeout, and masks apt's periodic units so a node never upgrades away from
the lock. The step scripts are stand-ins that log; cloud-init and systemctl are stand-ins that log their arguments."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from apt_sandbox import AptSandbox, flat_repository, stub_dir
from conftest import REPO

INSTALL = REPO / "images" / "install"
STEPS = ("kernel.sh", "fabric.sh", "gpu-stack.sh", "lustre.sh", "agents.sh", "nodecheck.sh")
APT_UNITS = ("apt-daily.timer apt-daily-upgrade.timer apt-daily.service apt-daily-upgrade.service "
             "unattended-upgrades.service")


def _bake(tmp_path: Path, cloud_init_rc: int = 0) -> tuple[subprocess.CompletedProcess[str], list[str], Path]:
    scripts = tmp_path / "images" / "install"
    scripts.mkdir(parents=True)
    for name in ("install.sh", "common.sh"):
        shutil.copy(INSTALL / name, scripts / name)
    log = tmp_path / "log"
    for step in STEPS:
        (scripts / step).write_text(f'echo "{step} $*" >>"{log}"\n')
    stubs = stub_dir(tmp_path / "stubs", (), {
        "cloud-init": f'echo "cloud-init $*" >>"{log}"; exit {cloud_init_rc}',
        "systemctl": f'echo "systemctl $*" >>"{log}"'})
    env_file = tmp_path / "pins.env"
    env_file.write_text("GPUFLEET_CLOUD=aws\n")
    root = tmp_path / "root"
    done = subprocess.run(["bash", str(scripts / "install.sh"), "--env", str(env_file), "--nvswitch", "no"],
                          env={"PATH": f"{stubs}:/usr/bin:/bin", "GPUFLEET_ROOT": str(root)},
                          capture_output=True, text=True, timeout=60, check=False)
    return done, log.read_text().splitlines() if log.exists() else [], root


@pytest.mark.parametrize("cloud_init_rc", [0, 2])  # 2: done with recoverable errors (cloud-init >= 23.4)
def test_the_bake_waits_for_cloud_init_and_masks_apts_timers_before_any_install(tmp_path, cloud_init_rc):
    done, log, root = _bake(tmp_path, cloud_init_rc)
    assert done.returncode == 0, done.stderr
    assert log == ["cloud-init status --wait", f"systemctl mask {APT_UNITS}",
                   "systemctl stop apt-daily.timer apt-daily-upgrade.timer",
                   "kernel.sh ", "gpu-stack.sh no", "fabric.sh ", "lustre.sh ", "agents.sh ", "nodecheck.sh "]
    assert (root / "etc/apt/apt.conf.d/90gpufleet-lock-timeout").read_text() == 'DPkg::Lock::Timeout "600";\n'


def test_a_cloud_init_that_failed_stops_the_bake(tmp_path):
    done, log, _ = _bake(tmp_path, cloud_init_rc=1)
    assert done.returncode == 2 and "cloud-init failed on the builder VM" in done.stderr
    assert log == ["cloud-init status --wait"]


def test_the_lock_timeout_reaches_a_vendor_installers_plain_apt_get(tmp_path):
    """EFA's and eRDMA's installers run apt-get themselves: the apt.conf.d file is what makes them wait."""
    box = AptSandbox(tmp_path / "root", locking=True)
    repo = flat_repository(tmp_path / "ubuntu", {"libibverbs1": ["1.0-1"]}, "Ubuntu")
    (box.root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file://{repo} /\n")
    env = box.env("/usr/sbin:/usr/bin:/sbin:/bin")
    settle = subprocess.run(
        ["bash", "-c", f'source "{INSTALL}/common.sh"; systemctl() {{ :; }}; cloud-init() {{ :; }}; settle_machine'],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    assert settle.returncode == 0, settle.stderr
    subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=True, timeout=60)
    holder = box.hold_dpkg_lock(3)
    try:
        done = subprocess.run(["apt-get", "install", "-y", "libibverbs1"], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    finally:
        holder.wait()
    assert done.returncode == 0, done.stderr
    assert box.installed().get("libibverbs1") == "1.0-1"
