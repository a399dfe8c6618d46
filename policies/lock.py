"""Access to the image lock (components.lock): id shapes and unbaked-image tags at import (constants only),
the lock file itself lazily, only when a rule needs it."""

from __future__ import annotations

import importlib
from types import ModuleType


def lock_module() -> ModuleType:
    """components.lock, imported lazily so that importing the rules reads no file."""
    return importlib.import_module("components.lock")
