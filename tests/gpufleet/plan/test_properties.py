"""Generated stack files: validation never crashes, the CLI answers 0, 1 or 2 with the field named on 2 and
nothing written, and plans are the same across processes with different hash seeds."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, get_args

import libyaml_files
import pytest
from conftest import REPO, SHIPPED_STACKS, read_cluster, write_stack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_depth import DEEP, examples
from typer.testing import CliRunner

from gpufleet import cli, collector
from gpufleet.plan.planner import plan_stack
from gpufleet.prepare import prepare
from gpufleet.stackfile import CLUSTER_KEY, SpecInvalid
from gpufleet.stackfile.scheduler import JobOperator

CLUSTERS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in SHIPPED_STACKS.glob("Pulumi.*.yaml")
                  if "gpufleet:cluster" in libyaml_files.load(p.read_text())["config"])
BASES = {name: read_cluster(name) for name in CLUSTERS}
CLOUDS = ("aws", "azure", "alicloud")
# Each property runs once per cloud on that cloud's shipped clusters: every cloud gets its share of the cases,
# and `make test` can spread the three runs over its workers. Totals under `make test-deep`: 10,002 validations,
# 300 CLI runs and 300 full plans; `make test` runs hypothesis's default 100 validations per cloud and a few of the
# rest.
VALIDATIONS, CLI_RUNS, PLANS = examples(3_334, 100), examples(100, 4), examples(100, 3)
# No example database: CI runs in a fresh clone, and a test must not write into the repository.
SLOW = settings(
    deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=12)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def places(node: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every path into a nested structure of maps and lists, the root included."""
    yield path
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from places(child, (*path, key))


def at(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


def of_cloud(cloud: str) -> list[str]:
    return [name for name in CLUSTERS if name.startswith(f"{cloud}-")]


@st.composite
def mutated_clusters(draw: st.DrawFn, cloud: str) -> dict[str, Any]:
    """One of the cloud's shipped clusters with one to three places replaced, deleted, or given an extra key."""
    raw = copy.deepcopy(BASES[draw(st.sampled_from(of_cloud(cloud)))])
    for _ in range(draw(st.integers(1, 3))):
        paths = list(places(raw))[1:]
        path = paths[draw(st.integers(0, len(paths) - 1))]  # an index: cheaper to draw than a new sampled_from
        parent, key = at(raw, path[:-1]), path[-1]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[key] = draw(values)
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(values)
    return raw


@st.composite
def valid_clusters(draw: st.DrawFn, cloud: str) -> dict[str, Any]:
    """One of the cloud's shipped clusters with its first group resized, its tags, environment and (Kubernetes) job
    operators changed: plans in full."""
    raw = copy.deepcopy(BASES[draw(st.sampled_from(of_cloud(cloud)))])
    group = raw["node_groups"][0]
    low = draw(st.integers(0, 4))
    desired = draw(st.integers(low, low + 4))
    group["size"] = {"min": low, "desired": desired, "max": draw(st.integers(max(desired, 1), desired + 8))}
    if group.get("idle") and low >= group["size"]["max"]:  # idle scales down to min, so min < max
        group["size"]["max"] = low + 1
    if group.get("on_demand_base", 0) > group["size"]["max"]:
        group["on_demand_base"] = group["size"]["max"]
    raw["tags"] = draw(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
                                       st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True), max_size=3))
    raw.pop("budget", None)
    raw["environment"] = draw(st.sampled_from(["dev", "staging", "prod"]))
    if "scheduler" in raw:
        raw["scheduler"]["job_operators"] = draw(st.lists(st.sampled_from(get_args(JobOperator)), unique=True))
    return raw


def test_every_cloud_has_shipped_clusters_to_vary() -> None:
    assert all(of_cloud(cloud) for cloud in CLOUDS) and sum(map(len, map(of_cloud, CLOUDS))) == len(CLUSTERS)


@pytest.mark.parametrize("cloud", CLOUDS)
@settings(SLOW, max_examples=VALIDATIONS)
@given(data=st.data())
def test_validation_refuses_by_field_or_accepts_never_crashes(cloud: str, data: st.DataObject) -> None:
    try:
        prepare({CLUSTER_KEY: data.draw(mutated_clusters(cloud))})
    except SpecInvalid as invalid:
        assert invalid.errors and all(str(error).strip() for error in invalid.errors)


@pytest.mark.parametrize("cloud", CLOUDS)
@settings(SLOW, max_examples=CLI_RUNS)
@given(data=st.data())
def test_the_cli_answers_0_1_or_2_and_writes_nothing(tmp_path_factory, cloud: str, data: st.DataObject) -> None:
    directory = tmp_path_factory.mktemp("stacks")
    path = write_stack(directory, "gen", data.draw(mutated_clusters(cloud)))
    before = sorted(directory.iterdir())
    result = CliRunner().invoke(cli.app, ["plan", "--stack-file", str(path), "--format", "json"])
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        # "invalid stack" names the fields; "invalid <file>" a file that is not YAML (the writer's rare unicode
        # or flow-key quirks can produce one from generated keys): both exit 2 before anything is written.
        # On stdout, no plan: the error document (`--format json` writes one for an invalid stack) or, for a file
        # that is not YAML, nothing.
        assert result.stderr.startswith("error: invalid ")
        assert result.stdout == "" or "resources" not in json.loads(result.stdout)
    else:
        assert json.loads(result.stdout)["stack"] == "gen"
    assert sorted(directory.iterdir()) == before


@pytest.mark.parametrize("cloud", CLOUDS)
@settings(SLOW, max_examples=PLANS)
@given(data=st.data())
def test_valid_variations_plan_in_full(tmp_path_factory, cloud: str, data: st.DataObject) -> None:
    with collector.paused():  # as the CLI and plan --all run a plan
        plan = plan_stack(write_stack(tmp_path_factory.mktemp("stacks"), "gen", data.draw(valid_clusters(cloud))))
        collector.collect_after_stack()
    assert plan.exit_code in (0, 1) and plan.resources and plan.cloud == cloud
    assert plan.summary["gpus"]["max"] >= plan.summary["gpus"]["desired"] >= plan.summary["gpus"]["min"]


def test_plans_are_identical_across_hash_seeds() -> None:
    script = (
        "import json, sys; from pathlib import Path; from gpufleet.plan.planner import plan_stack; "
        "print(json.dumps([plan_stack(Path(f'stacks/Pulumi.{s}.yaml'), Path('stacks')).to_json() "
        "for s in sys.argv[1:]], sort_keys=True))"
    )
    # make test: one cloud's stack (Azure: the provider with the most maps); make test-deep: one of each cloud.
    stacks = [of_cloud(cloud)[0] for cloud in (CLOUDS if DEEP else ("azure",))]
    runs = [  # side by side: each is a fresh interpreter importing all three providers
        subprocess.Popen([sys.executable, "-c", script, *stacks], cwd=REPO, stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONHASHSEED": seed})
        for seed in ("1", "2")
    ]
    outputs = {run.communicate()[0] for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(outputs) == 1 and json.loads(outputs.pop())
