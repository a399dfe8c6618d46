"""How deep the property tests go: `make test` (before every commit) runs each with a small budget, `make test-deep`
(GPUFLEET_TEST_DEPTH=deep; CI runs both) with the full one. One switch, read by every budget below."""

from __future__ import annotations

import os

DEEP = os.environ.get("GPUFLEET_TEST_DEPTH") == "deep"


def examples(deep: int, quick: int) -> int:
    """The number of generated cases a property runs at this depth."""
    return deep if DEEP else quick
