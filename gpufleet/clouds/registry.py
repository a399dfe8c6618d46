"""The one list of clouds and the lookup of each cloud's backend.

Adding a cloud: add a folder `components/clouds/<cloud>/` with the same module names as the others
(its `backend.py` defines BACKEND and its `spec.py` the cloud's stack-file model), then add its name here.
Backends are imported on first use so a plan pulls in only its own cloud's provider SDK.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from .backend import CloudBackend

# The one list of clouds, as a type for pydantic models and the JSON Schema, and as a tuple.
Cloud = Literal["aws", "azure", "alicloud"]
CLOUDS: tuple[str, ...] = get_args(Cloud)


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
