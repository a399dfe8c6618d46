"""One stack's plan outcome, as the reports read it.

The same fields as the `plan --all` batch's outcome (plan JSON document or the error of an invalid stack), so
either can be rendered."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StackOutcome:
    name: str
    path: Path
    exit_code: int
    plan: dict[str, Any] | None
    error: str | None
