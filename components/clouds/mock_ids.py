"""Deterministic stand-ins the offline engine derives from a resource's type and name, shared by every cloud's
mocks: the same stack always plans to the same ids."""

from __future__ import annotations

import hashlib
import uuid


def digest(seed: str, length: int) -> str:
    """`length` hex digits derived from `seed`."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def guid(seed: str) -> str:
    """A version-4 GUID derived from `seed`, as clouds write GUIDs."""
    return str(uuid.UUID(digest(seed, 32), version=4))


def opaque_id(name: str, seed: str) -> str:
    """An id for a type the cloud's mocks give no shape: opaque, and no computed outputs beside it."""
    return f"{name}-{digest(seed, 8)}"
