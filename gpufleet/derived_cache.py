"""What the code makes of a data file (or of nothing but itself), made once per content, not once per process.

Every command read and validated the lock, the catalog and the facts beside them again (YAML, then pydantic building
its validators and running them: 50-90 ms of a command meant to start in a quarter second), and `schema` built every
cloud's models to describe them. A result is kept pickled under the user's cache folder, keyed by what it is, the
file's bytes and the code that made it (the project's modules, by size and time, with the interpreter and
pydantic). A file that fails validation is never kept, so its errors are read afresh each time. The cache is a
convenience: a folder that cannot be made, is not the user's own, or holds a damaged entry is passed over and the
result is made as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
import stat
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# The project's packages, side by side in the distribution: the models and validators live in gpufleet, and some of
# what they check against (fabric and subnet facts) in components and policies.
CODE = tuple(Path(__file__).resolve().parent.parent / name for name in ("gpufleet", "components", "policies"))
STALE_SECONDS = 86_400  # another code version's entries, removed a day after they were last made


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/gpufleet/validated` (`~/.cache/...` when unset), as the XDG base directories say."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpufleet" / "validated"


@functools.cache
def code_version() -> str:
    """Every module of the project's packages by path, size and modification time, with the interpreter and
    pydantic: any change to a model or validator (an edit, an upgrade) makes a new version."""
    from pydantic import VERSION

    digest = hashlib.sha256(f"{sys.version}\0{VERSION}".encode())
    for package in CODE:
        for folder, dirs, files in sorted(os.walk(package)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(files):
                if name.endswith(".py"):
                    info = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:24]


def kept(kind: str, data: bytes, build: Callable[[], T]) -> T:
    """`build()` (what the code makes of `data` as `kind`, e.g. a file's bytes validated into a model), or what it
    returned before for the same kind, bytes and code. What `build` raises is raised and nothing is kept."""
    folder = _own_folder()
    if folder is None:
        return build()
    key = hashlib.sha256(kind.encode() + b"\0" + data).hexdigest()
    entry = folder / f"{key}.pickle"
    try:
        return pickle.loads(entry.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass  # none yet, or written by a run that broke off: made again below
    made = build()
    partial = entry.with_suffix(f".{uuid.uuid4().hex}.partial")
    try:
        partial.write_bytes(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
        partial.replace(entry)
    except OSError:
        partial.unlink(missing_ok=True)
    return made


@functools.cache
def _own_folder() -> Path | None:
    """This code version's folder, made private on first use; None where it cannot be, or where the cache folder
    is not this user's alone (pickles are code: only the user's own are read)."""
    root = cache_root()
    folder = root / code_version()
    try:
        if not folder.is_dir():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            _remove_stale_versions(root, keep=folder.name)
        info = os.stat(root)
    except OSError:
        return None
    owner = getattr(os, "getuid", None)  # no owner to compare with on Windows: no cache there
    private = owner is not None and info.st_uid == owner() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return folder if private else None


def _remove_stale_versions(root: Path, keep: str) -> None:
    cutoff = time.time() - STALE_SECONDS
    for other in root.iterdir():
        try:
            if other.name != keep and other.stat().st_mtime < cutoff:
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            continue
