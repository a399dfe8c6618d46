"""Python's cyclic garbage collector paused for a command, and what a batch does between stacks instead.

A plan imports hundreds of thousands of long-lived objects (the provider SDKs, pydantic models) and frees few
cycles (~2 MB per plan): the collector's repeated passes over the imported objects cost about a fifth of a plan
(measured in tests/bench). A command therefore runs with the collector paused; a batch of plans in one process
collects the youngest generation after each stack, which holds what that plan allocated (~20 ms).

At the process's exit the interpreter collects once more, over every object still alive, whether or not the
collector is enabled (~0.7 s of a plan's ~2.7 s CPU, measured in tests/bench/test_plan_speed.py). A command process
frees nothing there that matters: the objects go with the process. So a command freezes them at exit (gc.freeze:
the collector no longer tracks them), which skips that pass.
"""

from __future__ import annotations

import atexit
import functools
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
            # What the block allocated joins the oldest generation (freeze, then unfreeze): enabling the collector
            # with it all in the youngest would walk every object the command made at once (~0.1-0.2 s of a plan).
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def collect_after_stack() -> None:
    """Free the cycles one plan left behind, without walking the objects that imports made long ago."""
    if not gc.isenabled():
        gc.collect(0)


@functools.cache
def skip_collection_at_exit() -> None:
    """Freeze every object when the process exits (once registered per process: a test process that runs several
    commands registers it once), before the interpreter's last collection would walk them."""
    atexit.register(gc.freeze)
