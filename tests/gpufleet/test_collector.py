"""The collector policy of a command (gpufleet/collector.py): paused while it runs, its objects moved to the oldest
generation before the collector is back, and no collection over them when the process exits."""

from __future__ import annotations

import gc
import subprocess
import sys

from conftest import REPO

from gpufleet import collector

# A cycle with a finaliser, dropped while the collector is off: only a collection can find it, and says so.
GARBAGE = """
import gc, sys
sys.path.insert(0, {root!r})
from gpufleet import collector
gc.disable()
class Cycle:
    def __del__(self):
        print("collected", flush=True)
node = Cycle()
node.self = node
del node
{register}
"""


def exit_collects(register: str) -> bool:
    done = subprocess.run([sys.executable, "-c", GARBAGE.format(root=str(REPO), register=register)],
                          capture_output=True, text=True, check=True)
    return "collected" in done.stdout


def test_a_command_skips_the_collection_at_exit() -> None:
    assert exit_collects("") is True  # the interpreter's last collection walks everything, even with gc off
    assert exit_collects("collector.skip_collection_at_exit()") is False


def test_paused_turns_the_collector_off_and_hands_the_blocks_objects_to_the_oldest_generation() -> None:
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        with collector.paused():
            assert not gc.isenabled()
            made = [[] for _ in range(10)]
        assert gc.isenabled() and gc.get_freeze_count() == 0
        oldest = {id(obj) for obj in gc.get_objects(generation=2)}
        assert all(id(obj) in oldest for obj in made)
    finally:
        if not was_enabled:
            gc.disable()
