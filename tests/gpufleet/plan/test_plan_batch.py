"""`plan --all`: the batch plans in worker processes or here with the same outcomes, in the order of the names;
a broken stack is that stack's exit status, never the batch's end; piped output is one line per stack."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from conftest import SHIPPED_STACKS
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.plan import batch, planner
from gpufleet.plan.batch import PARALLEL_FROM, StackOutcome, plan_stacks

SMALL = ["aws-images", "azure-images", "alicloud-images", "aws-infer-g6e"]
# Two problems, so an invalid stack's error spans several lines before the table joins it.
BROKEN = ("config:\n  aws:region: us-east-1\n"
          "  gpufleet:cluster: {extends: aws-train-p5, environment: moon, tags: {a: 1}}\n")


@pytest.fixture
def small_stacks(tmp_path: Path) -> Path:
    target = tmp_path / "stacks"
    target.mkdir()
    for name in [*SMALL, "aws-train-p5"]:
        shutil.copy(SHIPPED_STACKS / f"Pulumi.{name}.yaml", target)
    (target / "Pulumi.broken.yaml").write_text(BROKEN)
    return target


def test_workers_and_this_process_give_the_same_outcomes_in_the_order_asked(small_stacks: Path) -> None:
    names = ["aws-infer-g6e", "broken", *SMALL[:3]]
    assert len(names) >= PARALLEL_FROM
    parallel = list(plan_stacks(small_stacks, names, workers=2))
    sequential = list(plan_stacks(small_stacks, names, workers=1))
    assert [o.name for o in parallel] == names
    assert parallel == sequential
    by_name = {o.name: o for o in parallel}
    assert by_name["broken"].exit_code == 2 and by_name["broken"].plan is None
    assert "environment: Input should be" in (by_name["broken"].error or "")
    for name in SMALL[:3] + ["aws-infer-g6e"]:
        outcome = by_name[name]
        assert outcome.error is None and outcome.exit_code in (0, 1)
        assert outcome.plan is not None and outcome.plan["stack"] == name and outcome.plan["resources"]
        assert outcome.path == small_stacks / f"Pulumi.{name}.yaml"


def test_an_internal_error_is_that_stacks_exit_3(monkeypatch, small_stacks: Path) -> None:
    real = planner.plan_stack  # plan_one looks it up on the planner module at each call

    def flaky(path: Path, stacks_dir: Path | None = None) -> planner.PlanResult:
        if path.name == "Pulumi.azure-images.yaml":
            raise RuntimeError("engine fell over")
        return real(path, stacks_dir)

    monkeypatch.setattr(planner, "plan_stack", flaky)
    outcomes = {o.name: o for o in plan_stacks(small_stacks, ["aws-images", "azure-images"], workers=1)}
    assert outcomes["azure-images"].exit_code == 3 and outcomes["azure-images"].plan is None
    assert outcomes["azure-images"].error == "internal error: RuntimeError: engine fell over"
    assert outcomes["aws-images"].exit_code == 0 and outcomes["aws-images"].plan is not None


def test_a_stack_whose_worker_died_is_planned_again_alone(small_stacks: Path) -> None:
    died: Future[StackOutcome] = Future()
    died.set_exception(BrokenProcessPool("a worker ended abruptly"))
    outcome = batch._result(died, small_stacks, "aws-images")
    assert outcome == batch.plan_one(small_stacks, "aws-images")


def test_piped_table_is_one_line_per_stack_at_80_columns(small_stacks: Path) -> None:
    result = CliRunner().invoke(
        cli.app, ["plan", "--all", "--stacks-dir", str(small_stacks)], env={"COLUMNS": "80"}
    )
    lines = result.stdout.splitlines()
    names = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in small_stacks.glob("*.yaml"))
    assert result.exit_code == 2
    assert [line.split()[0] for line in lines] == names
    (broken,) = [line for line in lines if line.startswith("broken ")]
    assert len(broken) > 80 and "invalid stack: environment: Input should be" in broken
    assert "'dev', 'staging' or 'prod'; tags: " in broken
    assert "planning" not in result.output  # no progress bar off a terminal


def test_jobs_must_be_positive(small_stacks: Path) -> None:
    result = CliRunner().invoke(cli.app, ["plan", "--all", "--jobs", "0", "--stacks-dir", str(small_stacks)])
    assert result.exit_code == 2 and "--jobs" in result.output


def test_progress_bar_only_on_a_terminal(monkeypatch) -> None:
    import importlib
    import io

    from rich.console import Console

    cli_app = importlib.import_module("gpufleet.cli.app")  # the module (the package exports the Typer `app`)

    for terminal in (False, True):
        screen = io.StringIO()
        monkeypatch.setattr(cli_app, "err", Console(file=screen, force_terminal=terminal, width=80))
        with cli_app.progress(3) as advance:
            for _ in range(3):
                advance()
        # A bar draws on a terminal (and clears itself); piped, nothing at all is written.
        assert bool(screen.getvalue()) is terminal


class _Recorder:
    """Stands in for one worker's executor: records what it is handed, in order (the scheduling is under test)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def submit(self, _fn, _stacks_dir: Path, name: str, _digest_key: str | None) -> Future[StackOutcome]:
        self.names.append(name)
        return Future()


def test_a_worker_keeps_to_one_provider_while_its_stacks_last(small_stacks: Path) -> None:
    # Most of a worker's first plans is importing its provider's SDK: two workers on two providers import one each.
    for index in range(3):
        shutil.copy(SHIPPED_STACKS / "Pulumi.aws-infer-g6e.yaml", small_stacks / f"Pulumi.aws-{index}.yaml")
    names = ["aws-0", "azure-images", "aws-1", "alicloud-images", "aws-2", "aws-images"]
    queues = batch._by_provider(small_stacks, names)
    assert {key: list(queue) for key, queue in queues.items()} == {
        ("aws",): ["aws-0", "aws-1", "aws-2", "aws-images"], ("azure-native",): ["azure-images"],
        ("alicloud",): ["alicloud-images"]}
    pools, last, running = [_Recorder(), _Recorder()], [None, None], {}
    for worker in (0, 1, 0, 0, 1, 0):  # the order the workers come back free
        batch._dispatch(pools, worker, last, queues, running, small_stacks, None)
    # The first worker takes the largest provider and stays on it; the second another, then steals what is left.
    assert pools[0].names == ["aws-0", "aws-1", "aws-2", "aws-images"]
    assert pools[1].names[0] == "azure-images" and sorted(pools[1].names) == ["alicloud-images", "azure-images"]
    assert len(running) == 6 and not any(queues.values())


def test_a_worker_starts_with_the_planner_imported_by_the_fork_server() -> None:
    # Issue 37: a spawned worker imported the CLI, the planner, the engine and the pack again before its first stack
    # (~0.5 s CPU each); forked from a server that imported them once, it starts with them loaded.
    with batch._pool(1) as worker:
        loaded = worker.submit(eval, "'gpufleet.plan.planner' in __import__('sys').modules").result()
        parent = worker.submit(os.getppid).result()
    assert loaded
    assert parent != os.getpid()  # not forked from this process, which may hold the engine's state
