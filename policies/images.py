"""Access to the image lock (components.lock), imported only when a rule needs it."""

from __future__ import annotations

import importlib
import re
from types import ModuleType

AMI_ID = re.compile(r"^ami-(?:[0-9a-f]{8}|[0-9a-f]{17})$")


def lock_module() -> ModuleType:
    """components.lock, imported lazily so that importing the rules reads no file."""
    return importlib.import_module("components.lock")
