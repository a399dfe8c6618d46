"""One judgement of a mount path a stack names (storage.scratch_mount, storage.shared.mount, any later one).

A file system mounted over a system directory hands the node to whoever can write that file system: shared
storage over the cron directory runs their jobs as root, over root's .ssh admits their keys, scratch over
gpufleet's own configuration rewrites the node check. So a mount is refused at, under or above (shadowing)
any directory below.
"""

from __future__ import annotations

import posixpath

# Directories the operating system, the cloud agents and gpufleet's bootstrap read as trusted (FHS 3.0 plus the
# paths components/bootstrap writes). A mount may not be one of them, lie under one, or contain one (a mount at
# /opt hides /opt/gpufleet and /opt/aws). /tmp, /mnt, /data, /scratch and the like stay free. /opt/amazon holds what
# the EFA installer (images/install/fabric.sh) puts on every AWS node: libfabric in /opt/amazon/efa, Open MPI in
# /opt/amazon/openmpi, the NCCL plugin beside them (Amazon EC2 User Guide, "Get started with EFA and NCCL":
# /opt/amazon/efa/bin/fi_info, /opt/amazon/openmpi/bin/mpirun): a file system there feeds every job's NCCL its code.
SYSTEM_DIRECTORIES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run", "/sbin",
    "/snap", "/sys", "/usr", "/var", "/opt/aws", "/opt/amazon", "/opt/gpufleet",
)
# Mounting over a home directory's .ssh (any user's, at any depth) replaces its authorized_keys; over /home, all.
SSH_DIRECTORY = ".ssh"
# Directories every user and root write by well-known names: a shared file system there lets whoever writes it from
# elsewhere plant the links and files root's jobs then follow (the kernel's protected_symlinks guards only sticky,
# world-writable directories, and the file system's root has the file system's own mode). Node-local scratch may
# sit there: only the node writes it.
SHARED_ONLY = ("/tmp",)  # machine-path-ok: a node directory


def normal(path: str) -> str:
    """`path` as the kernel resolves it without symlinks: '..', '.', '//' and a trailing '/' folded."""
    folded = posixpath.normpath("/" + path.lstrip("/"))
    return "/" + folded.lstrip("/")


def mount_problem(path: str, shared: bool = False) -> str | None:
    """Why `path` cannot be a mount point of a stack's file system (`shared`: one other machines write), or None."""
    if not path.startswith("/"):
        return f"{path!r} is not an absolute path"
    resolved = normal(path)
    shown = repr(path) if resolved == path else f"{path!r} (that is {resolved})"
    if resolved == "/":
        return f"{shown} would cover the whole system: use a directory of its own like /scratch"
    if resolved == "/home" or SSH_DIRECTORY in resolved.split("/"):
        return f"{shown} would replace users' SSH keys: mount it elsewhere, e.g. /data"
    for system in SYSTEM_DIRECTORIES + (SHARED_ONLY if shared else ()):
        if resolved == system or resolved.startswith(system + "/") or system.startswith(resolved + "/"):
            return (f"{shown} is in or over {system}, a system directory: whoever writes the file system would "
                    "own every node; use a directory of its own like /data or /scratch")
    return None
