"""Waiting for what a deploy seeded to be listed by its cloud (a custom metric's first data point): poll until it is,
within a bound, then stop the deploy with the reason. Cloud-neutral: each cloud's seed says what `listed` asks."""

from __future__ import annotations

import time
from collections.abc import Callable


def await_listed(listed: Callable[[], bool], timeout_seconds: float, poll_seconds: float,
                 timed_out: Callable[[], Exception], sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] | None = None) -> None:
    """Ask `listed` every `poll_seconds` until it answers True; raise `timed_out()` once `timeout_seconds` pass.
    `sleep` and `clock` are for tests."""
    sleep, clock = sleep or time.sleep, clock or time.monotonic
    deadline = clock() + timeout_seconds
    while not listed():
        if clock() >= deadline:
            raise timed_out()
        sleep(poll_seconds)
