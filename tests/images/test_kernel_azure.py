"""kernel.sh and lustre.sh on Azure under bash with stub commands: the image boots the kernel series Microsoft's Lustre
client support matrix lists for Ubuntu 22.04 (5.15.0-*-azure, held), chosen before any module is built, instead of
the marketplace image's HWE kernel the build VM runs; apt refuses any other kernel; the client is the DKMS package at
the lock's version, built explicitly for the boot kernel (the VM cannot reboot into it), DOCA's mlnx-ofed-kernel
before the modules that build against it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import REPO

from gpufleet.lock import load_lock, render_install_env

INSTALL = REPO / "images" / "install"
HWE, LTS = "6.8.0-1041-azure", "5.15.0-1089-azure"
# apt-get: installing the LTS metapackage lays its kernel into /boot; purging a kernel's image takes it away.
# The bake passes apt its dpkg lock timeout first (common.sh apt_get; test_installer.py checks it): logged without.
APT_GET = f"""#!/bin/bash
[[ $1 == -o ]] && shift 2
echo "apt-get $*" >> "$STUB_LOG"
if [[ " $* " == *" linux-image-azure-lts-22.04 "* ]]; then touch "$GPUFLEET_ROOT/boot/vmlinuz-{LTS}"; fi
if [[ $1 == purge ]]; then
    for p in "$@"; do [[ $p == linux-image-[0-9]* ]] && rm -f "$GPUFLEET_ROOT/boot/vmlinuz-${{p#linux-image-}}"; done
fi
exit 0
"""
# dpkg-query: the marketplace image's HWE kernel packages, installed.
DPKG_QUERY = f"""#!/bin/bash
echo "dpkg-query $*" >> "$STUB_LOG"
[[ $* == *"linux-*-{HWE}"* ]] && printf 'ii  linux-image-{HWE}\\nii  linux-modules-{HWE}\\nii  linux-headers-{HWE}\\n'
exit 0
"""
LOGGING = ("apt-mark", "curl", "sha256sum")
# dkms: mlnx-ofed-kernel is added (DOCA) and built for no kernel yet; every call logged.
DKMS = """#!/bin/bash
echo "dkms $*" >> "$STUB_LOG"
[[ $* == "status -m mlnx-ofed-kernel" ]] && echo "mlnx-ofed-kernel/25.10.OFED.25.10.1.2.8.1: added"
exit 0
"""
SEEDED = "debconf-set-selections linux-base linux-base/removing-running-kernel boolean false"


def _stub(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _bake(tmp_path: Path, script: str = "bash kernel.sh && bash lustre.sh") -> tuple[int, list[str], str]:
    bin_dir, root = tmp_path / "bin", tmp_path / "root"
    bin_dir.mkdir()
    (root / "boot").mkdir(parents=True)
    (root / "boot" / f"vmlinuz-{HWE}").touch()  # the kernel the build VM runs
    for name in LOGGING:
        _stub(bin_dir / name, f'#!/bin/bash\necho "{name} $*" >> "$STUB_LOG"\n')
    _stub(bin_dir / "apt-get", APT_GET)
    _stub(bin_dir / "dkms", DKMS)
    _stub(bin_dir / "uname", f"#!/bin/bash\necho {HWE}\n")
    _stub(bin_dir / "dpkg-query", DPKG_QUERY)
    # gpg --show-keys reports microsoft.asc as the key the lock pins (common.sh fetch_key).
    _stub(bin_dir / "gpg", '#!/bin/bash\necho "pub:-:4096:1:0:0:::-:"\n'
                           'echo "fpr:::::::::BC528686B50D79E339D3721CEB3E94ADBE1229CF:"\n')
    _stub(bin_dir / "debconf-set-selections", '#!/bin/bash\necho "debconf-set-selections $(cat)" >> "$STUB_LOG"\n')
    env_file = tmp_path / "azure.env"
    env_file.write_text(render_install_env(load_lock().profiles["cuda12.8-r580"], "azure"))
    log = tmp_path / "calls.log"
    done = subprocess.run(
        ["bash", "-c", f'set -a; source "{env_file}"; set +a; cd "{INSTALL}"; {script}'],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(log), "GPUFLEET_ROOT": str(root),
             "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=60, check=False,
    )
    return done.returncode, log.read_text().splitlines() if log.exists() else [], done.stderr


def test_the_image_boots_the_supported_lts_kernel_chosen_before_any_module_and_holds_it(tmp_path: Path) -> None:
    rc, calls, err = _bake(tmp_path)
    assert rc == 0, err
    lock = load_lock().profiles["cuda12.8-r580"].agents["azure"]
    client = f"amlfs-lustre-client-dkms-{lock['amlfs_lustre_client'].version}"
    assert client == "amlfs-lustre-client-dkms-2.15.8-39-g2d32b59" and lock["lustre_kernel"].version == "5.15.0"
    install_lts = calls.index("apt-get install -y --no-install-recommends linux-image-azure-lts-22.04 "
                              "linux-headers-azure-lts-22.04")
    (purge,) = [i for i, c in enumerate(calls) if c.startswith("apt-get purge")]
    headers = calls.index(f"apt-get install -y --no-install-recommends linux-headers-{LTS}")
    install_client = calls.index(f"apt-get install -y --no-install-recommends {client}")
    # LTS kernel in, the HWE kernels and their metapackages out, then the client (its DKMS build never meets HWE).
    assert install_lts < purge < headers < install_client
    for package in ("linux-azure", "linux-image-azure", f"linux-image-{HWE}", f"linux-modules-{HWE}",
                    f"linux-headers-{HWE}"):
        assert f" {package}" in calls[purge], calls[purge]
    assert calls.index(SEEDED) < purge  # linux-base does not abort removing the running kernel
    assert not re.search(r"amlfs\S*=", "\n".join(calls))  # no per-kernel prebuilt metapackage (PACKAGE=KERNEL)
    assert not any(HWE in c for c in calls if c.startswith("dkms"))
    assert "apt-mark -o DPkg::Lock::Timeout=600 hold linux-image-azure-lts-22.04 linux-headers-azure-lts-22.04" in calls
    assert (f"apt-mark -o DPkg::Lock::Timeout=600 hold {client} lustre-client lustre-client-modules-dkms") in calls
    assert any(c.startswith("curl ") and c.endswith("https://packages.microsoft.com/keys/microsoft.asc") for c in calls)
    listing = (tmp_path / "root/etc/apt/sources.list.d/amlfs.list").read_text()
    assert "https://packages.microsoft.com/repos/amlfs-jammy/ jammy main" in listing
    assert (tmp_path / "root/etc/gpufleet/boot-kernel").read_text() == f"{LTS}\n"
    refusal = (tmp_path / "root/etc/apt/preferences.d/gpufleet-boot-kernel").read_text()
    assert refusal.startswith(f"Package: linux-image-{LTS} linux-image-unsigned-{LTS} linux-modules-{LTS} ")


def test_every_dkms_module_is_built_for_the_boot_kernel_mlnx_ofed_kernel_first(tmp_path: Path) -> None:
    (tmp_path / "root/var/lib/dkms/mlnx-ofed-kernel").mkdir(parents=True)
    rc, calls, err = _bake(tmp_path)
    assert rc == 0, err
    dkms = [c for c in calls if c.startswith("dkms ") and "status" not in c]
    assert dkms == [f"dkms install mlnx-ofed-kernel/25.10.OFED.25.10.1.2.8.1 -k {LTS}", f"dkms autoinstall -k {LTS}"]
    for module in ("iser", "isert", "srp"):  # DKMS >= 3.0 orders autoinstall by them; 2.8: test_dkms_jammy.py
        assert (tmp_path / f"root/etc/dkms/{module}.conf").read_text() == 'BUILD_DEPENDS="mlnx-ofed-kernel"\n'


def test_the_lustre_client_needs_the_boot_kernel_chosen_first(tmp_path: Path) -> None:
    rc, calls, err = _bake(tmp_path, "bash lustre.sh")
    assert rc == 2 and "no boot kernel recorded (kernel.sh runs before any module is built)" in err
    assert not any(c.startswith("apt-get install") for c in calls)

