"""Plan speed against the import floor: `make bench`, not part of `make test`.

Floor: a fresh interpreter that imports pulumi and the provider modules the plan uses, sets the SDK's mock
monitor with mocks that answer with the inputs and registers one resource, importing nothing of gpufleet (its
engine included: with the engine in the floor, the floor would hide the project's own start-up). The garbage
collector is off in it and its objects are frozen at exit, as in a gpufleet command (gpufleet/collector.py: the
interpreter's last collection over every live object is ~0.5 s of the floor alone; a floor that still paid it
would credit the plan with skipping the SDK's share). Subject: a fresh interpreter running `gpufleet plan --stack S
--format json`; both timed in the same rounds (bench_tools.best_of), the ratio of CPU times asserted, the wall
ratio printed.

pulumi_aws is one lazy package: each of its modules (a service's resource classes and input types) loads on
first use, so "importing the provider a plan uses" means importing the modules its resources come from (read
from the plan's own resource types: aws-train-p5 uses nine). Also timed: the floor with pulumi_aws.ec2 only
(the one module its resource needs), against which aws-train-p5 is a strict xfail: those eight other module
imports alone exceed 1.3x of it, before the program runs. Against the honest floor every plan is a strict xfail
too (PROJECT_GAP): the 1.3x target predates it, and was met only while the floor imported the engine.
"""

from __future__ import annotations

import functools
import json
import subprocess

import pytest
from bench_tools import Timing, best_of, gpufleet, python
from conftest import REPO
from sdk_inputs import is_custom_resource

pytestmark = pytest.mark.bench

RUNS = 7
TARGET = 1.3
# The collector is off from the first line and the objects frozen at exit, as in a gpufleet command
# (gpufleet/collector.py), which imports the SDK inside it.
GC_OFF = "import atexit, gc\ngc.disable()\natexit.register(gc.freeze)\n"
FLOOR = """
import asyncio
import pulumi, pulumi_aws as aws
from pulumi.runtime import mocks
from pulumi.runtime.stack import run_pulumi_func

class Echo(pulumi.runtime.Mocks):
    def new_resource(self, args): return f"{args.name}-id", dict(args.inputs)
    def call(self, args): return {}

loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
mocks.set_mocks(Echo(), project="gpufleet", stack="bench", preview=False)
loop.run_until_complete(run_pulumi_func(lambda: aws.ec2.Vpc("v", cidr_block="10.0.0.0/16")))
"""
# pulumi_aws's modules are lazy: the first attribute read (not __name__ or __dict__) runs the module.
MODULES = "import importlib\n[getattr(importlib.import_module(m), 'load', 0) for m in {modules!r}]\n"
TRAIN_GAP = (
    "measured 2.4x (2026-11-27): importing the eight other pulumi_aws modules aws-train-p5 registers types from "
    "(autoscaling, budgets, cloudwatch, fsx, iam, kms, sns, vpc) is 1.3-1.4x of this floor on its own, before the "
    "program runs; see NOTES.md"
)
PROJECT_GAP = (
    "measured 1.6-1.7x (aws-train-p5, aws-images) and 1.9x (aws-train-eks) on 2026-11-27, the floor importing the "
    "same pulumi_aws and pulumi_kubernetes modules: on top of them a plan spends ~0.65-0.8s of its own (~1.4s for "
    "EKS): the CLI framework, pydantic and its model builds, YAML and rich (~0.3s), the planner, components and every "
    "cloud's policy rules and models (~0.25s), resolve, and the program's registrations over the SDK (the floor "
    "registers one resource, an EKS plan ~150); see NOTES.md"
)


def provider_module(resource_type: str) -> str | None:
    """The provider SDK module a resource type comes from: pulumi_aws.<service> for `aws:<service>/x:Y`,
    pulumi_kubernetes.<group>.<version> for `kubernetes:<group>/<version>:Kind` (a custom resource:
    pulumi_kubernetes.apiextensions), pulumi_kubernetes.provider for its provider; None for gpufleet's own."""
    package, module, _ = resource_type.split(":")
    if package == "aws":
        return f"pulumi_aws.{module.split('/')[0]}"
    if resource_type == "pulumi:providers:kubernetes":
        return "pulumi_kubernetes.provider"
    if package == "kubernetes":
        group, version = module.split("/")
        return ("pulumi_kubernetes.apiextensions" if is_custom_resource(resource_type)
                else f"pulumi_kubernetes.{group.split('.')[0]}.{version}")
    return None


def provider_modules(stack: str) -> list[str]:
    """The provider SDK modules of the types the stack's plan registers."""
    done = subprocess.run(gpufleet("plan", "--stack", stack, "--format", "json"), cwd=REPO, capture_output=True,
                          text=True, check=False)
    types = {resource["type"] for resource in json.loads(done.stdout)["resources"]}
    return sorted({module for t in types if (module := provider_module(t))})


@functools.cache
def measured(stack: str) -> dict[str, Timing]:
    modules = provider_modules(stack)
    timings = best_of(
        {
            "ec2 floor": python(GC_OFF + FLOOR),
            "floor": python(GC_OFF + MODULES.format(modules=modules) + FLOOR),
            "plan": gpufleet("plan", "--stack", stack, "--format", "json"),
        },
        RUNS,
    )
    floor, ec2_floor, plan = timings["floor"], timings["ec2 floor"], timings["plan"]
    ratio = plan.over(floor)
    print(
        f"\n{stack}: plan {plan.cpu:.2f}s CPU ({plan.wall:.2f}s wall), floor with its {len(modules)} provider "
        f"modules ({', '.join(modules)}) {floor.cpu:.2f}s CPU ({floor.wall:.2f}s wall): ratio {ratio.cpu:.2f} CPU, "
        f"{ratio.wall:.2f} wall (target <= {TARGET}; best of {RUNS}). Against the floor with pulumi_aws.ec2 only: "
        f"{plan.cpu / ec2_floor.cpu:.2f} CPU, where the modules alone are {floor.cpu / ec2_floor.cpu:.2f}"
    )
    return timings


@pytest.mark.parametrize("stack", [pytest.param(stack, marks=pytest.mark.xfail(strict=True, reason=PROJECT_GAP))
                                   for stack in ("aws-train-p5", "aws-train-eks", "aws-images")])
def test_plan_stays_near_the_import_floor(stack: str) -> None:
    timings = measured(stack)
    assert timings["plan"].cpu / timings["floor"].cpu <= TARGET


@pytest.mark.xfail(strict=True, reason=TRAIN_GAP)
def test_train_plan_against_the_ec2_only_floor() -> None:
    timings = measured("aws-train-p5")
    assert timings["plan"].cpu / timings["ec2 floor"].cpu <= TARGET
