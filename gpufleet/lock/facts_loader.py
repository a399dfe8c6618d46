"""Read the resolved facts beside a lock (images/lock.resolved.yaml) into ResolvedFacts."""

from __future__ import annotations

from pathlib import Path

from ..yaml_model import load_yaml_model
from .facts import ResolvedFacts, resolved_path


def load_facts(lock_path: Path) -> ResolvedFacts:
    """The facts `gpufleet lock resolve` recorded beside `lock_path`; empty where nothing was resolved yet (no
    file). A file that does not match the model raises SpecInvalid naming each field."""
    path = resolved_path(Path(lock_path))
    if not path.is_file():
        return ResolvedFacts()
    return load_yaml_model(path, ResolvedFacts)
