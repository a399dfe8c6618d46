"""Read images/lock.yaml into a Lock, once per process per file version; problems name every field."""

from __future__ import annotations

from pathlib import Path

from ..stackfile.errors import SpecError, SpecInvalid
from ..yaml_model import load_yaml_model
from .apply_facts import with_resolved_digests
from .facts_loader import load_facts
from .model import Lock

DEFAULT_LOCK_PATH = Path(__file__).resolve().parents[2] / "images" / "lock.yaml"

# (path, mtime, size) -> Lock: a plan reads the lock once; a lock rewritten on disk (images pin) is read anew.
_LOADED: dict[tuple[Path, int, int, int], Lock] = {}


class LockError(SpecInvalid):
    """The lock file cannot be read or does not match the schema; every problem names its field."""


def load_lock(path: Path = DEFAULT_LOCK_PATH) -> Lock:
    """The lock at `path`, its tag-only image pins completed by the digests recorded beside it (apply_facts)."""
    path = Path(path).resolve()
    try:
        stat = path.stat()
    except OSError as err:
        raise LockError([SpecError("", f"cannot read {path} ({err.strerror or err})")], str(path)) from None
    try:
        facts = load_facts(path)  # cached by its own file's version: a new resolve is read anew
    except SpecInvalid as invalid:
        raise LockError(invalid.errors, invalid.source) from None
    key = (path, stat.st_mtime_ns, stat.st_size, id(facts))
    if key not in _LOADED:
        try:
            # The shipped lock is libyaml-parsed; a lock named on the command line gets the bounded reader.
            _LOADED[key] = with_resolved_digests(load_yaml_model(path, Lock), facts)
        except SpecInvalid as invalid:
            raise LockError(invalid.errors, invalid.source) from None
    return _LOADED[key]
