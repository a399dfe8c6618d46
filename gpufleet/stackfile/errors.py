"""Errors raised for an invalid stack file: each names the field path and the fix."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SpecError:
    """One problem in a stack file, at a field path such as `node_groups[0].size`."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecInvalid(Exception):
    """The stack file is invalid; carries every problem found, not only the first."""

    def __init__(self, errors: list[SpecError], source: str = "") -> None:
        self.errors = errors
        self.source = source
        what = source or "stack"
        super().__init__(f"invalid {what}:\n" + "\n".join(f"  {e}" for e in errors))


def field_path(prefix: str, loc: tuple[object, ...]) -> str:
    """Render a pydantic location as `node_groups[0].size.min`."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# A field name, dashes allowed (tags.cost-center), then any list indexes.
SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)")


def split_field_path(path: str) -> list[str | int] | None:
    """`node_groups[0].size.max` -> ["node_groups", 0, "size", "max"] (field_path's inverse); None when not a path."""
    parts: list[str | int] = []
    for segment in path.split("."):
        match = SEGMENT.fullmatch(segment)
        if not match:
            return None
        parts.append(match.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return parts
