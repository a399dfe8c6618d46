"""The bootstrap's one error: bad input or a rendering that cannot be used. A leaf of the bootstrap package, so its
config and its operations settings both raise it without importing each other."""

from __future__ import annotations


class BootstrapError(ValueError):
    """Bad bootstrap input or a rendering that cannot be used; the message names the field."""
