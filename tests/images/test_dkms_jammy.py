"""common.sh's dkms_build under the Azure image's own DKMS, jammy's dkms 2.8.7 (tests/ubuntu_rootfs.py), on stand-in
DOCA modules: iser, isert and srp build against mlnx-ofed-kernel, so each stand-in's build fails unless
mlnx-ofed-kernel is installed for the kernel first, as the real ones fail without its symbols.

DKMS 2.8's autoinstall takes modules in name order (iser first) and, in that release, reads no /etc/dkms/<module>.conf
(its read_conf looks for /etc/dkms/$module.conf while autoinstall leaves $module unset), so the BUILD_DEPENDS files
dkms_build writes order nothing there; the explicit install of mlnx-ofed-kernel before autoinstall is what does.
Each test runs in an overlay of the cached tree, so the tree stays as built."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from ubuntu_rootfs import JAMMY_DKMS

pytestmark = pytest.mark.waits  # on DKMS's processes: scheduled first (tests/conftest.py)

KERNEL = "5.15.0-1089-azure"  # the 5.15 LTS series the Azure image boots (tests/images/test_kernel_azure.py)
VERSION = "25.10.OFED.25.10.1.2.8.1"
DEPENDENTS = ("iser", "isert", "srp")


def _stand_in(module: str, order: Path) -> str:
    """Shell lines that lay a stand-in module's source in /usr/src and add it to DKMS; its build records its name in
    `order` and, for a dependent, fails unless mlnx-ofed-kernel is installed for the kernel it builds for."""
    needs = "" if module == "mlnx-ofed-kernel" else "test -e /lib/modules/${kernelver}/updates/dkms/mlnx_compat.ko && "
    built = "mlnx_compat" if module == "mlnx-ofed-kernel" else f"ib_{module}"
    conf = (f'PACKAGE_NAME="{module}"\nPACKAGE_VERSION="{VERSION}"\n'
            f'MAKE[0]="{needs}echo {module} >> {order} && touch {built}.ko"\nCLEAN="true"\n'
            f'BUILT_MODULE_NAME[0]="{built}"\nDEST_MODULE_LOCATION[0]="/updates/dkms"\nAUTOINSTALL="yes"\n')
    source = f"/usr/src/{module}-{VERSION}"
    return (f"mkdir -p {source} && printf '%s' '{conf}' > {source}/dkms.conf && echo 'all:' > {source}/Makefile && "
            f"echo '/* stand-in */' > {source}/stub.c && dkms add -m {module} -v {VERSION} >/dev/null\n")


def _in_jammy(tmp_path: Path, build: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The stand-ins added and the kernel's headers laid out, then `build` (bash, with common.sh at $COMMON), then
    `dkms --version` and `dkms status`, in an overlay of jammy's DKMS tree; and the modules in the order their
    builds ran."""
    order = tmp_path / "order"
    shutil.copy(REPO / "images/install/common.sh", tmp_path / "common.sh")
    script = (f"mkdir -p /lib/modules/{KERNEL}/build/include\n"
              + "".join(_stand_in(module, order) for module in ("mlnx-ofed-kernel", *DEPENDENTS))
              + f"COMMON={tmp_path}/common.sh\n{build}\ndkms --version\ndkms status\n")
    done = JAMMY_DKMS.run(["bash", "-euo", "pipefail", "-c", script], tmp_path, scratch=tmp_path / "overlay")
    return done, order.read_text().split() if order.exists() else []


def test_dkms_build_installs_mlnx_ofed_kernel_before_the_modules_built_against_it(tmp_path: Path) -> None:
    done, order = _in_jammy(tmp_path, f'source "$COMMON"; dkms_build {KERNEL}')
    assert done.returncode == 0, done.stdout + done.stderr
    assert order[0] == "mlnx-ofed-kernel" and sorted(order[1:]) == sorted(DEPENDENTS), order
    for module in ("mlnx-ofed-kernel", *DEPENDENTS):
        assert f"{module}/{VERSION}, {KERNEL}, x86_64: installed" in done.stdout, done.stdout


def test_jammys_autoinstall_alone_builds_iser_first_whatever_etc_dkms_says(tmp_path: Path) -> None:
    """Why dkms_build installs mlnx-ofed-kernel itself: the BUILD_DEPENDS files, as dkms_build writes them, then
    autoinstall alone."""
    files = "".join(f"mkdir -p /etc/dkms && echo 'BUILD_DEPENDS=\"mlnx-ofed-kernel\"' > /etc/dkms/{module}.conf\n"
                    for module in DEPENDENTS)
    done, order = _in_jammy(tmp_path, f"{files}dkms autoinstall -k {KERNEL} || true")
    assert "dkms-2.8.7" in done.stdout, done.stdout
    assert order[0] == "mlnx-ofed-kernel", order  # iser's build ran first and failed: it recorded nothing
    assert f"iser/{VERSION}: added" in done.stdout, done.stdout  # never built
