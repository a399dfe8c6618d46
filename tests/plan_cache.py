"""Shipped plans made once per test run, not once per xdist worker: the first worker to need a stack's plan makes
it and leaves it pickled in a folder the run's controller made; the others wait on its lock and read it. Plans are
the same in every process (tests/gpufleet/plan/test_properties.py), and a pickled plan reads back in milliseconds
where planning a stack again costs each worker 0.5 to 3 s of CPU."""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

FOLDER = "GPUFLEET_TEST_PLAN_CACHE"


def open_for_the_run() -> None:
    """In the controller, before its workers start (they inherit the environment)."""
    os.environ[FOLDER] = tempfile.mkdtemp(prefix="gpufleet-test-plans-")


def close_for_the_run() -> None:
    shutil.rmtree(os.environ.pop(FOLDER, ""), ignore_errors=True)


def made_once(stack: str, plan: Callable[[], Any]) -> Any:
    """The stack's plan from the run's folder, made by `plan` in the first process asking for it."""
    folder = os.environ.get(FOLDER)
    if not folder or not Path(folder).is_dir():
        return plan()
    pickled = Path(folder) / f"{stack}.pickle"
    with open(Path(folder) / f"{stack}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if pickled.exists():
            return pickle.loads(pickled.read_bytes())
        made = plan()
        written = pickled.with_suffix(".partial")
        written.write_bytes(pickle.dumps(made))
        written.replace(pickled)
        return made
