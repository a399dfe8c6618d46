"""Plan cost counted, not timed: `make bench`, not part of `make test`.

test_plan_speed.py times every stack, and on this shared two-core machine the same stack's ratio moves by a third
from one run to the next, so its misses can only be non-strict. valgrind counts the instructions a process executes
instead (bench_tools.instructions), moving by under 1% however busy the machine is.
Here the plan, the SDK registering the plan's resources (REPLAYED) and the same after the CLI framework's command
(WITH_FRAMEWORK) are counted for the smallest stack, a VM cluster, and the two Alibaba VM clusters whose timed ratio
over the SDK and the framework (test_plan_speed.py) measured above 1.3x; the ratios held to the same 1.3x target.
Instructions are not seconds (a cache miss costs more than an add), so the timed ratios stay the targets; these say
how much of a timed miss is the program's own work and not the machine's noise.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest
from bench_tools import REPLAY, REPLAYED, WITH_FRAMEWORK, gpufleet, instructions, python
from conftest import REPO

pytestmark = pytest.mark.bench

TARGET = 1.3
# Counted 2026-11-29 (pulumi 3.272.0, pulumi-alicloud 4.0.0, pulumi-aws 7.51.1, pydantic 2.14.4, typer 0.29.2):
# alicloud-images 1.74-1.75 against the SDK, 1.41-1.43 with the framework; aws-train-p5 1.29-1.30, 1.21;
# alicloud-infer-gn7i 1.41-1.42, 1.27; alicloud-train-ebmgn8v 1.41-1.42, 1.27-1.28. What is over is the project's
# fixed cost (NOTES.md, "Speed"): its own modules' imports are ~0.5 G of a plan's 2.6 G. Over the SDK alone the
# framework's command is 0.35 G wherever counted: on alicloud-images' 1.52 G floor that leaves the project 0.1 G.
FIXED_COST = "the project's ~0.8-0.9 G fixed cost (imports, model classes, first validation)"
MISSED = {
    ("alicloud-images", "sdk"): "counted 1.74-1.75: the framework's 0.35 G and the project's 0.79 G on a 1.52 G floor",
    ("alicloud-images", "sdk and framework"): "counted 1.41-1.43: the project's 0.79 G on a 1.87 G floor",
    ("alicloud-infer-gn7i", "sdk"): f"counted 1.41-1.42: the framework's 0.35 G and {FIXED_COST} on a 3.0 G floor",
    ("alicloud-train-ebmgn8v", "sdk"): f"counted 1.41-1.42: the framework's 0.35 G and {FIXED_COST} on a 3.0 G floor",
}
STACKS = ("alicloud-images", "aws-train-p5", "alicloud-infer-gn7i", "alicloud-train-ebmgn8v")


@functools.cache
def counted(stack: str, folder: Path) -> dict[str, int]:
    argv = gpufleet("plan", "--stack", stack, "--format", "json")
    recorded = folder / f"{stack}.json"
    plan = subprocess.run([*argv, "--show-secrets"], cwd=REPO, capture_output=True, text=True, check=True)
    recorded.write_text(plan.stdout)  # secrets shown: the SDK registers the values the program sent
    counts = {
        "plan": instructions(argv),
        "sdk": instructions(python(REPLAYED, str(REPLAY), "--once", str(recorded))),
        "sdk and framework": instructions(python(WITH_FRAMEWORK, str(REPLAY), "--once", str(recorded))),
    }
    print(f"\n{stack}: plan {counts['plan'] / 1e9:.2f} G instructions; the SDK registering its resources "
          f"{counts['sdk'] / 1e9:.2f} G ({counts['plan'] / counts['sdk']:.2f}); after the CLI framework's command "
          f"{counts['sdk and framework'] / 1e9:.2f} G ({counts['plan'] / counts['sdk and framework']:.2f})")
    return counts


@pytest.mark.parametrize(("stack", "floor"), [
    pytest.param(stack, floor, marks=pytest.mark.xfail(strict=True, reason=MISSED[stack, floor]))
    if (stack, floor) in MISSED else (stack, floor)
    for stack in STACKS for floor in ("sdk", "sdk and framework")
])
def test_a_plan_executes_at_most_1_3x_the_instructions_of_its_floor(
        stack: str, floor: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    counts = counted(stack, tmp_path_factory.getbasetemp())
    assert counts["plan"] / counts[floor] <= TARGET
