"""Access to the image lock (gpufleet.lock): id shapes and unbaked-image tags at import (constants only),
the lock file itself lazily, only when a rule needs it."""

from __future__ import annotations

import importlib
from types import ModuleType


def lock_module() -> ModuleType:
    """gpufleet.lock, imported lazily so that importing the rules reads no file."""
    return importlib.import_module("gpufleet.lock")


def unpinned(cloud: str, image: str, what: str, fix: str) -> str | None:
    """The violation when `image` (named `what` in the message) is not pinned for `cloud` in images/lock.yaml,
    or when the lock cannot be read to tell; None when it is pinned."""
    lock = lock_module()
    try:
        pinned = lock.load_lock().image_ids(cloud)
    except (lock.LockError, OSError) as exc:
        return f"images/lock.yaml could not be read ({exc}), so {what} {image!r} is unchecked: fix the lock"
    if image not in pinned:
        return f"{what} {image!r} is not pinned in images/lock.yaml: {fix}"
    return None
