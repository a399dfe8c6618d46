"""What the cloud API readers share: importing a cloud SDK that may not be installed, and the time a fact is read."""

from __future__ import annotations

import importlib
from datetime import datetime, timezone
from types import ModuleType

from .http import SourceError

INSTALL = "pip install -e '.[resolve]'"


def require(module: str) -> ModuleType:
    """The SDK module, or SourceError naming the install that brings it (the SDKs are an optional extra)."""
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        raise SourceError(f"{module} is not installed ({missing}): `gpufleet lock resolve` reads the cloud APIs "
                          f"through their SDKs; run {INSTALL}") from None


def read_time(now: datetime | None) -> datetime:
    """`now` (tests pin it), else the current time; UTC either way."""
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
