"""Cost of node groups: `make bench`, not part of `make test`.

Each extra node group: `gpufleet plan` of a 1-group and an N-group stack (aws-train-p5 with N p5 groups), timed
in the same rounds; the marginal CPU per group against what the Pulumi SDK alone spends registering the same
resources (sdk_replay.py: the two recorded plans registered under the SDK's mock monitor, no gpufleet code),
marginal per group too. Target: a group costs at most 1.5x the SDK's part. Timed, the ratio of two differences
moved from 1.17 to 1.76 between two runs of one commit on this shared machine; counted in instructions (valgrind,
bench_tools.instructions) the same ratio holds still, so the target is held on both.
Policy evaluation at 64 groups: inside one process, the policy runner's time against the whole plan_stack call,
on plans after the first (imports done), best of a few.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_tools import REPLAY, REPLAYED, best_of, gpufleet, group_stack, instructions, python
from conftest import REPO

pytestmark = pytest.mark.bench

RUNS = 5
GROUPS = 33
COUNTED_GROUPS = 5  # counts do not move run to run: four extra groups say what 32 do, in a fifth of the time
PER_GROUP_TARGET = 1.5
POLICY_SHARE_TARGET = 0.10
POLICY_SHARE = """
import gc, json, sys, time
from pathlib import Path
from gpufleet import collector
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


@pytest.mark.xfail(strict=False, reason="timed on a shared machine: 1.17 to 1.76 on one commit; the counted test holds")
def test_each_extra_node_group_costs_at_most_one_and_a_half_times_the_sdk(tmp_path: Path) -> None:
    one, many, plans, recorded = _planned(tmp_path, GROUPS)
    counts = {name: len(json.loads(path.read_text())["resources"]) for name, path in recorded.items()}
    per_group_resources = (counts[many] - counts[one]) / (GROUPS - 1)
    sdk_one, sdk_many = _run_json([sys.executable, str(REPLAY), str(recorded[one]), str(recorded[many])])
    sdk_per_group = (sdk_many - sdk_one) / (GROUPS - 1)
    timings = best_of(plans, RUNS)
    base, big = timings[one], timings[many]
    per_group = (big.cpu - base.cpu) / (GROUPS - 1)
    ratio = per_group / sdk_per_group
    print(
        f"\nnode groups: 1 group {base.cpu:.2f}s CPU ({base.wall:.2f}s wall), {GROUPS} groups {big.cpu:.2f}s CPU "
        f"({big.wall:.2f}s wall): {per_group * 1000:.0f} ms CPU per extra group ({per_group / base.cpu:.1%} of a "
        f"one-group plan; best of {RUNS}). A group adds {per_group_resources:g} resources; the SDK alone registers "
        f"them in {sdk_per_group * 1000:.0f} ms CPU ({sdk_one:.2f}s for the 1-group plan's resources, "
        f"{sdk_many:.2f}s for the {GROUPS}-group plan's): ratio {ratio:.2f} (target <= {PER_GROUP_TARGET:g})"
    )
    assert ratio <= PER_GROUP_TARGET


def test_each_extra_node_group_executes_at_most_one_and_a_half_times_the_sdks_instructions(tmp_path: Path) -> None:
    one, many, plans, recorded = _planned(tmp_path, COUNTED_GROUPS)
    plan = {name: instructions(argv) for name, argv in plans.items()}
    sdk = {name: instructions(python(REPLAYED, str(REPLAY), "--once", str(path))) for name, path in recorded.items()}
    extra = COUNTED_GROUPS - 1
    per_group, sdk_per_group = (plan[many] - plan[one]) / extra, (sdk[many] - sdk[one]) / extra
    ratio = per_group / sdk_per_group
    print(
        f"\nnode groups, counted: 1 group {plan[one] / 1e9:.2f} G instructions, {COUNTED_GROUPS} groups "
        f"{plan[many] / 1e9:.2f} G: {per_group / 1e6:.0f} M per extra group; the SDK alone registering them "
        f"{sdk_per_group / 1e6:.0f} M: ratio {ratio:.2f} (target <= {PER_GROUP_TARGET:g})"
    )
    assert ratio <= PER_GROUP_TARGET


def _planned(folder: Path, groups: int) -> tuple[str, str, dict[str, list[str]], dict[str, Path]]:
    """A 1-group and a `groups`-group stack in `folder`: their names, `gpufleet plan` commands, and plan JSON files
    (secrets shown: the SDK registers the values the program sent)."""
    one, many = group_stack(folder, 1), group_stack(folder, groups)
    plans = {name: gpufleet("plan", "--stack", name, "--stacks-dir", str(folder), "--format", "json")
             for name in (one, many)}
    recorded = {}
    for name, argv in plans.items():
        recorded[name] = folder / f"{name}.json"
        recorded[name].write_text(json.dumps(_run_json([*argv, "--show-secrets"])))
    return one, many, plans, recorded


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
