"""What resolve_cluster refuses in a stack, by field path: the shape the cross-field check tests assert on."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid


def errors_by_field(cluster: dict[str, Any]) -> dict[str, str]:
    """Field path -> its messages joined with ' | '; fails the test when the stack is accepted."""
    with pytest.raises(SpecInvalid) as invalid:
        resolve_cluster(cluster)
    found: dict[str, str] = {}
    for error in invalid.value.errors:
        found[error.path] = " | ".join(filter(None, [found.get(error.path), error.message]))
    return found
