"""`gpufleet plan`: one stack, a stack file, or every stack of a directory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..spec import SpecInvalid, stack_names

if TYPE_CHECKING:
    from ..plan.batch import StackOutcome

from .app import DEFAULT_STACKS, Format, FormatOpt, StacksDir, app, emit_json, err, existing_stack, fail_invalid, out


@app.command()
def plan(
    stack: Annotated[str | None, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")] = None,
    stack_file: Annotated[Path | None, typer.Option("--stack-file", help="Path to a stack file.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Plan every stack in the stacks directory.")] = False,
    fmt: FormatOpt = Format.table,
    stacks_dir: StacksDir = DEFAULT_STACKS,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", min=1, help="--all: plan in up to N worker processes (default: the CPU count; 1: in this one)."
    )] = None,
) -> None:
    """Plan a stack offline under the mock engine: resources, fabric, policies, cost."""
    if all_stacks:
        raise typer.Exit(plan_all(stacks_dir, fmt, jobs))
    from ..plan.planner import plan_stack
    from ..render import print_plan

    if (stack is None) == (stack_file is None):
        err.print("error: give exactly one of --stack NAME, --stack-file PATH or --all")
        raise typer.Exit(2)
    path = stack_file if stack_file is not None else existing_stack(stacks_dir, stack or "")
    try:
        result = plan_stack(path, stacks_dir if stack is not None else None)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    if fmt is Format.json:
        emit_json(result.to_json())
    else:
        print_plan(out, result)
    raise typer.Exit(result.exit_code)


def plan_all(stacks_dir: Path, fmt: Format, jobs: int | None = None) -> int:
    from ..plan.batch import plan_stacks

    names = stack_names(stacks_dir) if stacks_dir.is_dir() else []
    if not names:
        err.print(f"error: --all found no Pulumi.<stack>.yaml in {stacks_dir}")
        return 2  # usage: nothing to plan
    lines, worst = [], 0
    with _progress(len(names)) as advance:
        for outcome in plan_stacks(stacks_dir, names, jobs):
            line = _summary_line(outcome)
            worst = max(worst, outcome.exit_code)
            lines.append(line)
            if fmt is Format.table:
                # One line per stack at any width: user text printed literally, never wrapped or styled.
                out.print(_table_line(line), highlight=False, soft_wrap=True, markup=False)
            advance()
    if fmt is Format.json:
        emit_json(lines)
    return worst


def _summary_line(outcome: StackOutcome) -> dict[str, Any]:
    if outcome.plan is None:
        return {"stack": outcome.name, "exit": outcome.exit_code, "error": outcome.error}
    return {"stack": outcome.name, "exit": outcome.exit_code, "resources": len(outcome.plan["resources"]),
            "violations": len(outcome.plan["policies"]["violations"]),
            "max_hourly_usd": outcome.plan["summary"]["hourly_usd"]["max_on_demand"]}


def _table_line(line: dict[str, Any]) -> str:
    if "error" in line:
        # An invalid stack lists one problem per line: joined, so the stack keeps one line.
        first, *problems = [part.strip() for part in str(line["error"]).splitlines() if part.strip()] or [""]
        detail = " ".join([first, "; ".join(problems)]).strip()
    else:
        detail = (f"{line['resources']} resources, {line['violations']} violation(s), "
                  f"max {line['max_hourly_usd']:.2f} USD/h")
    return f"{line['stack']:<28} exit {line['exit']}  {detail}"


@contextmanager
def _progress(total: int) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr when it is a terminal (and only then: CI logs get the lines alone)."""
    if not err.is_terminal:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("planning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        # Lines go to stdout: through the bar when stdout is the same terminal, straight to a pipe otherwise.
        console=err, transient=True, redirect_stdout=out.is_terminal, redirect_stderr=False,
    ) as progress:
        task = progress.add_task("stacks", total=total)
        yield lambda: progress.advance(task)
