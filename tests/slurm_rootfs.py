"""A Slurm of the image's release: Ubuntu resolute's (26.04) slurm-wlm 25.11 and munge in a root filesystem built once
with mmdebstrap under ~/.cache/gpufleet, and shims that run each daemon and client there.

Why not the machine's own: Debian bookworm ships 22.05, which takes neither a node's Topology= nor an empty switch
in topology.conf (both added in 25.05: slurm.conf.5 "Topology" of SchedMD/slurm@slurm-25-05-0-1). The image runs
SchedMD's 25.11.5; no Debian release ships 25.11 (trixie 24.11, sid 26.05), Ubuntu resolute's universe does
(25.11.2-1ubuntu2 in its Packages index), so the tests run the image's major release (ubuntu_rootfs.SLURM).

A shim runs its command in a mount namespace of its own, chrooted into the root filesystem with the machine's /tmp
(the tests' directories, the daemons' sockets), /run (a node's bind mounts of /run/munge and /run/slurm), /dev,
/sys, /etc/hosts (slurmctld resolves the machine's own name, where an srun of a step runs), a fresh /proc and the
working directory (read-only: the repository, whose files a test submits) mounted in, so paths and names mean the
same inside and out. Run as root (chroot and mount need it).

`python tests/ubuntu_rootfs.py` builds the root filesystem when missing (.ci/run does, ~80 s); tests only use it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ubuntu_rootfs import SLURM

COMMANDS = ("munged", "slurmctld", "slurmd", "scontrol", "srun", "sbatch", "sinfo", "squeue", "scancel")
ROOTFS = SLURM.path
SHIMS = ROOTFS.with_name(ROOTFS.name + "-bin")

SHIM = """#!/bin/sh
# gpufleet test shim (tests/slurm_rootfs.py): {command} of {rootfs}
exec unshare --mount --propagation private -- sh -c '
root=$1; shift
for dir in tmp run dev sys; do mount --rbind "/$dir" "$root/$dir"; done
mount --bind /etc/hosts "$root/etc/hosts"
mount -t proc proc "$root/proc"
case $PWD in /|/tmp|/tmp/*|/run|/run/*) ;; *) mkdir -p "$root$PWD" && mount --bind "$PWD" "$root$PWD" &&
    mount -o remount,bind,ro "$root$PWD";; esac
exec unshare --root="$root" --wd="$PWD" -- "$@"' sh {rootfs} {command} "$@"
"""


def shim_dir() -> Path:
    """A directory of shims, one per Slurm and munge command, to put first on PATH."""
    SHIMS.mkdir(parents=True, exist_ok=True)
    for command in COMMANDS:
        shim = SHIMS / command
        text = SHIM.format(command=command, rootfs=ROOTFS)
        if not shim.exists() or shim.read_text() != text:
            shim.write_text(text)
            shim.chmod(0o755)
    return SHIMS


@contextmanager
def slurm_on_path() -> Iterator[None]:
    """The shims first on this process's PATH (the daemons, the clients and the programs that call them), restored
    after."""
    before = os.environ["PATH"]
    os.environ["PATH"] = f"{shim_dir()}{os.pathsep}{before}"
    try:
        yield
    finally:
        os.environ["PATH"] = before


def missing() -> str | None:
    """Why the root filesystem cannot run the daemons here, or None."""
    return SLURM.missing()


def version(text: str) -> tuple[int, int]:
    """(major, minor) of `slurmctld -V`'s `slurm-wlm 25.11.2`."""
    found = re.search(r"(\d+)\.(\d+)\.\d+", text)
    assert found, f"no version in {text!r}"
    return int(found[1]), int(found[2])


def systemd_verify(folder: Path, *units: str) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` of `units` (names or paths) as the tree's own systemd reads them: its munge.service,
    Slurm's units and the commands they run are the Slurm release's, not whatever this machine has installed;
    `folder` (shared at its own path inside) comes first on the unit path."""
    return SLURM.run(["systemd-analyze", "verify", "--man=no", *units], shared=folder,
                     env={"PATH": "/usr/sbin:/usr/bin", "SYSTEMD_UNIT_PATH": f"{folder}:"})
