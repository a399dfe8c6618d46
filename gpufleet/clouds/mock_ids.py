"""Deterministic stand-ins the offline engine derives from a resource's type and name, shared by every cloud's
mocks: the same stack always plans to the same ids."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping
from typing import Any

Outputs = tuple[str, dict[str, Any]]
# (type, logical name, inputs, region, seed) -> (physical id, computed outputs)
Answer = Callable[[str, str, dict[str, Any], str, str], Outputs]


def digest(seed: str, length: int) -> str:
    """`length` hex digits derived from `seed`."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def guid(seed: str) -> str:
    """A version-4 GUID derived from `seed`, as clouds write GUIDs."""
    return str(uuid.UUID(digest(seed, 32), version=4))


def opaque_id(name: str, seed: str) -> str:
    """An id for a type the cloud's mocks give no shape: opaque, and no computed outputs beside it."""
    return f"{name}-{digest(seed, 8)}"


def answer_from(answers: Mapping[str, Answer], typ: str, name: str, inputs: dict[str, Any], region: str) -> Outputs:
    """The cloud's answer for `typ`, seeded by type and name; a type with none gets an opaque id and no computed
    outputs, so a test fails if the program ever feeds one of its outputs into another input."""
    seed = f"{typ}::{name}"
    found = answers.get(typ)
    return found(typ, name, inputs, region, seed) if found else (opaque_id(name, seed), {})
