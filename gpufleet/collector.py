"""Python's cyclic garbage collector paused for a command, and what a batch does between stacks instead.

A plan imports hundreds of thousands of long-lived objects (the provider SDKs, pydantic models) and frees few
cycles (~2 MB per plan): the collector's repeated passes over the imported objects cost about a fifth of a plan
(measured in tests/bench). A command therefore runs with the collector paused; a batch of plans in one process
collects the youngest generation after each stack, which holds what that plan allocated (~20 ms).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off within the block, back as it was after (a test process keeps collecting)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def collect_after_stack() -> None:
    """Free the cycles one plan left behind, without walking the objects that imports made long ago."""
    if not gc.isenabled():
        gc.collect(0)
