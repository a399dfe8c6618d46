"""`plan --all` over 30 stacks in worker processes against one process:
`make bench`, not part of `make test`. Wall time here: parallel workers save wall time, not CPU time."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bench_tools import best_of, forked_stacks, gpufleet
from conftest import REPO

pytestmark = pytest.mark.bench

STACKS = 30
RUNS = 2
# The issue sets no number: parallel workers must beat one process. Two workers on two cores would halve the
# planning, but each worker imports the provider SDKs again (see NOTES.md: measured 0.82 here).
TARGET = 1.0


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="parallel planning needs two CPUs")
def test_thirty_stacks_plan_faster_in_worker_processes(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    names = forked_stacks(stacks, STACKS)
    assert len(names) == STACKS
    runs = {
        mode: gpufleet("plan", "--all", "--stacks-dir", str(stacks), "--jobs", jobs)
        for mode, jobs in (("sequential", "1"), ("parallel", str(os.cpu_count())))
    }
    outputs = {mode: subprocess.run(argv, cwd=REPO, capture_output=True, text=True) for mode, argv in runs.items()}
    assert outputs["parallel"].stdout == outputs["sequential"].stdout
    assert len(outputs["parallel"].stdout.splitlines()) == STACKS
    timings = best_of(runs, RUNS)
    sequential, parallel = timings["sequential"], timings["parallel"]
    ratio = parallel.wall / sequential.wall
    print(
        f"\nplan --all, {STACKS} stacks: {os.cpu_count()} workers {parallel.wall:.1f}s wall, one process "
        f"{sequential.wall:.1f}s wall: ratio {ratio:.2f} (target < {TARGET}; best of {RUNS})"
    )
    assert ratio < TARGET
