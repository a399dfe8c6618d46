"""Plan speed as a ratio against a floor measured in the same run (`make bench`; not part of `make test`).

Floor: a fresh interpreter that imports the AWS provider SDK and registers one resource under the same
mock engine. Subject: a fresh interpreter that plans a shipped stack. Both are timed as whole processes,
best of a few runs, so the ratio holds on any machine.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from conftest import REPO

pytestmark = pytest.mark.bench

RUNS = 3
FLOOR = """
import pulumi, pulumi_aws as aws
from components.plan.engine import run_program
run_program(lambda: aws.ec2.Vpc("v", cidr_block="10.0.0.0/16"), {}, project="gpufleet", stack="bench",
            region="us-east-1", zones=["us-east-1a"])
"""
PLAN = "from components.cli import main; main()"


def best_of(code: str, *args: str) -> float:
    timings = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, check=True, capture_output=True)
        timings.append(time.perf_counter() - start)
    return min(timings)


@pytest.mark.parametrize("stack, most", [("aws-train-p5", 3.0), ("aws-images", 3.0)])
def test_plan_stays_near_the_import_floor(stack: str, most: float) -> None:
    floor = best_of(FLOOR)
    plan = best_of(PLAN, "plan", "--stack", stack, "--format", "json")
    ratio = plan / floor
    print(f"\n{stack}: plan {plan:.2f}s, floor {floor:.2f}s, ratio {ratio:.2f} (target <= {most})")
    assert ratio <= most
