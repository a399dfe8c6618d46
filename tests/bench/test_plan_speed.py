"""Plan speed against the import floor (issue 12 item 8a): `make bench`, not part of `make test`.

Floor: a fresh interpreter that imports the provider SDK the plan uses (pulumi_aws), sets the same mock engine
and registers one resource. Subject: a fresh interpreter running `gpufleet plan --stack S --format json`. Both
timed in the same rounds (bench_tools.best_of); the ratio of CPU times is asserted, the wall ratio printed.
"""

from __future__ import annotations

import pytest
from bench_tools import best_of, gpufleet, python

pytestmark = pytest.mark.bench

RUNS = 7
TARGET = 1.3
FLOOR = """
import pulumi, pulumi_aws as aws
from components.plan.engine import run_program
run_program(lambda: aws.ec2.Vpc("v", cidr_block="10.0.0.0/16"), {}, project="gpufleet", stack="bench",
            region="us-east-1", zones=["us-east-1a"])
"""
# Printed, not asserted: the floor plus the other pulumi_aws modules aws-train-p5 registers types from (the SDK
# loads each module on first attribute access), to show how much of the gap is provider imports.
MODULE_FLOOR = (
    "import pulumi_aws as a\n[a.autoscaling.Group, a.cloudwatch.EventRule, a.iam.Role, a.kms.Key, a.sns.Topic]\n"
)
TRAIN_GAP = (
    "measured 1.6-1.7x: on top of the floor the plan loads five more pulumi_aws modules (autoscaling, cloudwatch, "
    "iam, kms, sns: ~0.25x), the CLI and the policy pack (~0.2x) and pays the Pulumi SDK's first-use type "
    "introspection per resource class; see NOTES.md"
)


@pytest.mark.parametrize(
    "stack", [pytest.param("aws-train-p5", marks=pytest.mark.xfail(strict=True, reason=TRAIN_GAP)), "aws-images"]
)
def test_plan_stays_near_the_import_floor(stack: str) -> None:
    timings = best_of(
        {
            "floor": python(FLOOR),
            "module floor": python(MODULE_FLOOR + FLOOR),
            "plan": gpufleet("plan", "--stack", stack, "--format", "json"),
        },
        RUNS,
    )
    floor, plan = timings["floor"], timings["plan"]
    ratio = plan.over(floor)
    print(
        f"\n{stack}: plan {plan.cpu:.2f}s CPU ({plan.wall:.2f}s wall), floor {floor.cpu:.2f}s CPU "
        f"({floor.wall:.2f}s wall): ratio {ratio.cpu:.2f} CPU, {ratio.wall:.2f} wall (target <= {TARGET}; "
        f"best of {RUNS}); against the floor with aws-train-p5's provider modules: "
        f"{plan.cpu / timings['module floor'].cpu:.2f} CPU"
    )
    assert ratio.cpu <= TARGET
