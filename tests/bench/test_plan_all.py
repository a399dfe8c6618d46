"""`plan --all` over 30 stacks with two worker processes against one process: `make bench`, not part of
`make test`. Wall time here: parallel workers save wall time, not CPU time. Workers fork from a server that
imported the engine once; most of a worker's first plans is importing its provider's SDK modules, so the batch hands
a worker stacks of one provider while it can (gpufleet/plan/batch.py); the target leaves the imports' share that two
workers cannot split."""

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
WORKERS = 2
TARGET = 0.65


@pytest.mark.skipif((os.cpu_count() or 1) < WORKERS, reason="two workers need two CPUs")
@pytest.mark.xfail(strict=False, reason="with the fork server importing the planner once: 0.61-0.66 on a quiet "
                   "machine (2026-11-28/29, 2 cores), at the target's edge, so not yet strict: both workers import the "
                   "Kubernetes SDK (~0.45 s) and the provider whose stacks they share (~0.75 s for Azure) (NOTES.md)")
def test_thirty_stacks_plan_in_two_workers_within_two_thirds_of_one_process(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    names = forked_stacks(stacks, STACKS)
    assert len(names) == STACKS
    runs = {
        mode: gpufleet("plan", "--all", "--stacks-dir", str(stacks), "--jobs", jobs)
        for mode, jobs in (("sequential", "1"), ("parallel", str(WORKERS)))
    }
    outputs = {mode: subprocess.run(argv, cwd=REPO, capture_output=True, text=True) for mode, argv in runs.items()}
    assert outputs["parallel"].stdout == outputs["sequential"].stdout
    assert len(outputs["parallel"].stdout.splitlines()) == STACKS
    assert not [line for line in outputs["sequential"].stdout.splitlines() if " exit 2 " in line]  # all plan
    timings = best_of(runs, RUNS)
    sequential, parallel = timings["sequential"], timings["parallel"]
    ratio = parallel.wall / sequential.wall
    print(
        f"\nplan --all, {STACKS} stacks: {WORKERS} workers {parallel.wall:.1f}s wall, one process "
        f"{sequential.wall:.1f}s wall: ratio {ratio:.2f} (target <= {TARGET}; best of {RUNS})"
    )
    assert ratio <= TARGET
