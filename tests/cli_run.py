"""Run the gpufleet command as its entry point does, for tests that need its exit status (1, 2, 3)."""

from __future__ import annotations

import sys

import pytest

from gpufleet import cli


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["gpufleet", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    return int(exited.value.code or 0)
