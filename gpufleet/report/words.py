"""Values as a person writes them, for every report: a cell's text, a resource's name."""

from __future__ import annotations

from typing import Any


def cell_text(value: Any) -> str:
    """A value as a person writes it: nothing for None, yes/no, lists joined by commas (never Python's repr)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(cell_text(item) for item in value)
    return str(value)


def resource_name(urn: str) -> str:
    """The name part of a URN; a stack-level finding (no URN) is on the stack."""
    return urn.rsplit("::", 1)[-1] if urn else "stack"
