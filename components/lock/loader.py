"""Read images/lock.yaml into a Lock, turning every YAML or schema error into a LockError naming the field."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from .model import Lock

DEFAULT_LOCK_PATH = Path(__file__).resolve().parents[2] / "images" / "lock.yaml"


class LockError(ValueError):
    """The lock file cannot be read or does not match the schema; the message names the field."""


def _field_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "<root>"


def load_lock(path: Path = DEFAULT_LOCK_PATH) -> Lock:
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise LockError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise LockError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(raw, dict):
        raise LockError(f"{path}: <root>: expected a mapping")
    profiles = raw.get("profiles")
    if isinstance(profiles, dict):
        # The profile's name is its key; copy it in so a Profile knows its own name.
        for name, body in profiles.items():
            if isinstance(body, dict):
                body.setdefault("name", name)
    try:
        return Lock.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = _field_path(first["loc"])
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise LockError(f"{path}: {where}: {first['msg']}{more}") from None
