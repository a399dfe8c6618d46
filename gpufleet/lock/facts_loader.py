"""Read images/lock.resolved.yaml (what `gpufleet lock resolve` recorded) beside a lock; absent means nothing read."""

from __future__ import annotations

from pathlib import Path

from ..yaml_model import load_yaml_model
from .facts import ResolvedFacts, resolved_path

_LOADED: dict[tuple[Path, int, int], ResolvedFacts] = {}


def load_facts(lock_path: Path) -> ResolvedFacts:
    """The facts recorded beside `lock_path` (an empty record when no resolve has run); SpecInvalid names every
    malformed field."""
    path = resolved_path(Path(lock_path)).resolve()
    try:
        stat = path.stat()
    except FileNotFoundError:
        return ResolvedFacts()
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in _LOADED:
        _LOADED[key] = load_yaml_model(path, ResolvedFacts)
    return _LOADED[key]
