"""Python code run in a fresh interpreter from the repository root: what a command imports shows only where nothing
else has loaded it yet (a test process has loaded most of the project)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def last_line(code: str, timeout: float = 300) -> str:
    """The last line `code` printed; fails the test with its stderr where it did not exit 0."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]
