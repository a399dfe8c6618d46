"""Each cloud's backend, by name: gpufleet/clouds/<cloud>/backend.py's BACKEND, imported on first use so a plan
pulls in only its own cloud's modules."""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

from .registry import CLOUDS

if TYPE_CHECKING:
    from .backend import CloudBackend


@cache
def backend(cloud: str) -> CloudBackend:
    """The backend registered for `cloud`; KeyError for a cloud that is not registered."""
    if cloud not in CLOUDS:
        raise KeyError(f"unknown cloud {cloud!r}; known: {', '.join(CLOUDS)}")
    return import_module(f"{__package__}.{cloud}.backend").BACKEND


def cloud_of_resource_type(resource_type: str) -> str | None:
    """The cloud whose provider registers `resource_type` (e.g. `azure-native:compute:...` -> azure)."""
    prefix = resource_type.split(":", 1)[0]
    return next((cloud for cloud in CLOUDS if backend(cloud).provider == prefix), None)
