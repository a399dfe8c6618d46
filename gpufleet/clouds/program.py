"""A cloud's part of the program: registering its cluster and image pipeline through its components, and the
offline engine's answers in its provider's shapes. Each cloud's `program.py` module implements the protocol; it
sits above the components it builds from, where the cloud's backend (what the cloud is and can do) sits below
resolve."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from .registry import CLOUDS

if TYPE_CHECKING:
    from ..stackfile.models import ImagesSpec
    from .backend import ResolvedCluster


class CloudProgram(Protocol):
    def build_cluster(self, resolved: ResolvedCluster) -> Mapping[str, Any]:
        """Register the cluster's resources (under `pulumi up` or the offline engine); returns stack outputs."""
        ...

    def build_images(self, spec: ImagesSpec) -> Mapping[str, Any]:
        """Register the image pipeline of an image stack; returns stack outputs."""
        ...

    def mock_resource(self, typ: str, name: str, inputs: dict[str, Any], region: str) -> tuple[str, dict[str, Any]]:
        """Offline engine: the id and computed outputs the provider would return, in its shapes."""
        ...

    def mock_invoke(self, token: str, region: str, zones: list[str]) -> dict[str, Any] | None:
        """Offline engine: the answer to an invoke from local data, or None where there is none."""
        ...

    def role_names(self) -> Mapping[str, str]:
        """The cloud's built-in role definitions' names by id, for reports; empty where a grant names its role."""
        ...


@cache
def cloud_program(cloud: str) -> CloudProgram:
    """gpufleet/clouds/<cloud>/program.py, imported on first use (a plan loads only its own cloud's provider SDK);
    KeyError for a cloud that is not registered."""
    if cloud not in CLOUDS:
        raise KeyError(f"unknown cloud {cloud!r}; known: {', '.join(CLOUDS)}")
    program: CloudProgram = import_module(f"{__package__}.{cloud}.program")  # type: ignore[assignment]
    return program
