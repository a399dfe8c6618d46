"""Ubuntu root filesystems in which tests run a release's own programs: Slurm's daemons of resolute
(tests/slurm_rootfs.py), jammy's apt (tests/images/test_kernel_apt.py) and jammy's DKMS
(tests/images/test_dkms_jammy.py). Each is built once with mmdebstrap from Ubuntu's archive, checked with Ubuntu's
archive keyring (/usr/share/keyrings/ubuntu-archive-keyring.gpg of Debian's ubuntu-keyring), into ~/.cache/gpufleet,
and kept there; tests only use them.

`python tests/ubuntu_rootfs.py` builds every one that is missing (.ci/run does: ~80 s for Slurm's, ~10-20 s each for
jammy's). Using one needs root (chroot, mount).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

KEYRING = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
# Inside a mount namespace of its own: the tree (or an overlay of it whose changes go to $scratch), a fresh /proc,
# the machine's /dev, and $shared at the same path inside, where the caller's files lie.
CHROOT = """tree=$0 shared=$1 scratch=$2; shift 2
if [ -n "$scratch" ]; then
    mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
    mount -t overlay overlay -o "lowerdir=$tree,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/merged"
    tree=$scratch/merged
fi
mount -t proc proc "$tree/proc" && mount --rbind /dev "$tree/dev"
mkdir -p "$tree$shared" && mount --bind "$shared" "$tree$shared"
exec chroot "$tree" "$@"
"""
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpufleet"


@dataclass(frozen=True)
class UbuntuRootfs:
    """A release's packages (`packages` beside minbase) from `components` of its release pocket alone: frozen at
    release, so every build gets the same versions. `ready` is a file the finished tree holds."""

    purpose: str
    suite: str
    packages: tuple[str, ...]
    components: str
    ready: str

    @property
    def path(self) -> Path:
        """Named by purpose, suite and packages: a tree of another suite or package list is never reused."""
        digest = hashlib.sha256(" ".join(self.packages).encode()).hexdigest()[:8]
        return CACHE / f"{self.purpose}-{self.suite}-{digest}"

    def missing(self) -> str | None:
        """Why this tree cannot be used here, or None."""
        if os.geteuid() != 0:
            return f"the {self.suite} root filesystem needs root (chroot, mount)"
        if not self.is_built():
            return f"no {self.suite} root filesystem at {self.path}: run `python tests/ubuntu_rootfs.py` (.ci/run does)"
        return None

    def run(self, command: list[str], shared: Path, scratch: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`command` chrooted into the tree, with the folder `shared` at its own path inside; with `scratch`, in an
        overlay whose changes go there, so the tree stays as built."""
        assert not self.missing(), f"the {self.suite} root filesystem (.ci/run builds it): {self.missing()}"
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", CHROOT,
                               str(self.path), str(shared), str(scratch or ""), *command], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    def is_built(self) -> bool:
        """Whether the finished tree holds `ready`. Not followed if a link: resolute's /usr/sbin/slurmctld links to
        /etc/alternatives/slurmctld, absolute, which means the tree's own only inside the chroot."""
        return os.path.lexists(self.path / self.ready.lstrip("/"))

    def build(self) -> Path:
        """The tree, built into a new directory and moved in place when complete."""
        if self.is_built():
            return self.path
        building = self.path.with_name(self.path.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        mirror = f"deb [signed-by={KEYRING}] http://archive.ubuntu.com/ubuntu {self.suite} {self.components}"
        subprocess.run(
            ["mmdebstrap", "--variant=minbase", f"--include={','.join(self.packages)}",
             "--dpkgopt=path-exclude=/usr/share/{doc,man,locale}/*", self.suite, str(building), mirror],
            check=True)
        building.rename(self.path)
        return self.path


# Slurm's daemons and clients, and an MPI (Open MPI through mpi4py) whose ranks srun's PMIx plugin launches across
# nodes (tests/components/slurm/test_slurm_hosts_daemons.py); the systemd they come with verifies the units
# (slurm_rootfs.systemd_verify), with libseccomp, which it loads to read the SystemCallFilter of its own units.
SLURM = UbuntuRootfs("slurm", "resolute", ("slurmctld", "slurmd", "slurm-client", "munge", "python3-mpi4py",
                                           "libseccomp2"),
                     "main universe", "/usr/sbin/slurmctld")
# The VM images' release (install_env VM_UBUNTU 22.04): its apt 2.4 judges the pins the image scripts write.
JAMMY_APT = UbuntuRootfs("apt", "jammy", ("apt",), "main", "/usr/bin/apt-get")
# The Azure image's DKMS (jammy's dkms 2.8.7), which builds its modules for the boot kernel (common.sh dkms_build).
JAMMY_DKMS = UbuntuRootfs("dkms", "jammy", ("dkms",), "main", "/usr/sbin/dkms")
ALL = (SLURM, JAMMY_APT, JAMMY_DKMS)


if __name__ == "__main__":
    for rootfs in ALL:
        print(rootfs.build(), file=sys.stdout)
