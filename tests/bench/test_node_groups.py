"""Cost of node groups (issue 12 item 8b, 8c): `make bench`, not part of `make test`.

b) Each extra node group: `gpufleet plan` of a 1-group and an N-group stack (aws-train-p5 with N p5 groups),
   timed in the same rounds; the marginal cost per group as a share of the 1-group plan.
c) Policy evaluation at 64 groups: inside one process, the policy runner's time against the whole plan_stack
   call, on plans after the first (imports done), best of a few.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
from components.plan import planner

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


@pytest.mark.xfail(
    strict=True,
    reason="measured ~2% per group: each p5 group registers 6-7 resources (NodeGroup, launch template, placement "
    "group, scaling group, 2 lifecycle hooks...) and the Pulumi SDK's registration path (serialize inputs, mock "
    "monitor round trip, resolve outputs, stack trace) costs ~5 ms CPU per resource; see NOTES.md",
)
def test_each_extra_node_group_costs_at_most_one_percent_of_a_plan(tmp_path: Path) -> None:
    one, many = group_stack(tmp_path, 1), group_stack(tmp_path, GROUPS)
    plans = {
        name: gpufleet("plan", "--stack", name, "--stacks-dir", str(tmp_path), "--format", "json")
        for name in (one, many)
    }
    timings = best_of(plans, RUNS)
    base, big = timings[one], timings[many]
    per_group_cpu = (big.cpu - base.cpu) / (GROUPS - 1)
    share = per_group_cpu / base.cpu
    print(
        f"\nnode groups: 1 group {base.cpu:.2f}s CPU ({base.wall:.2f}s wall), {GROUPS} groups {big.cpu:.2f}s CPU "
        f"({big.wall:.2f}s wall): {per_group_cpu * 1000:.0f} ms CPU per extra group = {share:.1%} of a one-group "
        f"plan (target <= {PER_GROUP_TARGET:.0%}; best of {RUNS})"
    )
    assert share <= PER_GROUP_TARGET


def test_policy_evaluation_is_a_small_share_of_a_64_group_plan(tmp_path: Path) -> None:
    group_stack(tmp_path, 64)
    done = subprocess.run(python(POLICY_SHARE, str(tmp_path)), cwd=REPO, check=True, capture_output=True, text=True)
    share, policies, whole = json.loads(done.stdout)
    print(
        f"\npolicies at 64 node groups: {policies:.2f}s CPU of a {whole:.2f}s CPU plan = {share:.1%} "
        f"(target <= {POLICY_SHARE_TARGET:.0%}; best of 3 plans after the first)"
    )
    assert share <= POLICY_SHARE_TARGET
