"""What the offline engine records for each registered resource."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RecordedResource:
    """One RegisterResource call as the engine received it."""

    urn: str
    type: str
    name: str
    parent: str | None
    depends_on: tuple[str, ...]
    inputs: dict[str, Any]
    custom: bool
    protect: bool = False
    ignore_changes: tuple[str, ...] = ()
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "depends_on": list(self.depends_on),
            "inputs": self.inputs,
        }
