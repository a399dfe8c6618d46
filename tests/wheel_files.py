"""A minimal wheel for tests that serve one: a module and its .dist-info/METADATA (core metadata's email header
format), with the Requires-Python and Requires-Dist given."""

from __future__ import annotations

import io
import zipfile


def wheel_bytes(name: str, version: str, requires_python: str | None,
                requires_dist: list[str] | tuple[str, ...]) -> bytes:
    """The wheel's bytes; its METADATA's body names Requires-Dist too, which a reader of the headers must not take."""
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += f"Requires-Python: {requires_python}\n" if requires_python else ""
    metadata += "".join(f"Requires-Dist: {line}\n" for line in requires_dist)
    metadata += "\nA description naming Requires-Dist: x, which is the body, not a header\n"
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as wheel:
        wheel.writestr(f"{name}/__init__.py", "")
        wheel.writestr(f"{name}-{version}.dist-info/METADATA", metadata)
    return raw.getvalue()
