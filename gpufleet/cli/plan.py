"""`gpufleet plan`: one stack, a stack file, or every stack of a directory."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..plan.record import SHOW_SECRETS_ENV
from .app import (
    ReportFormat,
    ReportFormatOpt,
    StacksDir,
    app,
    emit_json,
    err,
    existing_stack,
    out,
    progress,
    project_stacks,
)

if TYPE_CHECKING:
    from ..plan.batch import StackOutcome

REPORTS = (ReportFormat.markdown, ReportFormat.sarif)


@app.command()
def plan(
    stack: Annotated[str | None, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")] = None,
    stack_file: Annotated[Path | None, typer.Option("--stack-file", help="Path to a stack file.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Plan every stack in the stacks directory.")] = False,
    fmt: ReportFormatOpt = ReportFormat.table,
    stacks_dir: StacksDir = None,
    show_secrets: Annotated[bool, typer.Option(
        "--show-secrets", envvar=SHOW_SECRETS_ENV,
        help="Print secret inputs in the JSON plan (else [secret], as `pulumi preview`).")] = False,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", min=1, help="--all: plan in up to N worker processes (default: the CPU count; 1: in this one)."
    )] = None,
) -> None:
    """Plan a stack offline under the mock engine: resources, fabric, policies, cost."""
    if all_stacks:
        raise typer.Exit(plan_all(project_stacks(stacks_dir), fmt, jobs))
    # Each output's modules where it is made: a JSON plan loads neither rich's tables nor the batch's process pool.
    from ..plan.planner import EXIT_INVALID, plan_stack, stack_name
    from ..stackfile import SpecInvalid

    if (stack is None) == (stack_file is None):
        err.print("error: give exactly one of --stack NAME, --stack-file PATH or --all")
        raise typer.Exit(2)
    if stack_file is None:
        stacks_dir = project_stacks(stacks_dir)
    path = stack_file if stack_file is not None else existing_stack(stacks_dir, stack or "")
    try:
        # A stack file's `extends` names stacks of --stacks-dir where given, else of the file's own folder.
        result = plan_stack(path, stacks_dir)
    except SpecInvalid as invalid:
        err.print(f"error: {invalid}")
        if fmt is ReportFormat.json:  # a machine reading stdout gets a document too: the stack, its exit, the errors
            emit_json({"stack": stack_name(path), "exit_code": EXIT_INVALID,
                       "errors": [{"field": e.path, "message": e.message} for e in invalid.errors]})
        if fmt in REPORTS:  # CI still gets a report to publish, naming the invalid stack
            from ..plan.batch import StackOutcome

            emit_report(fmt, [StackOutcome(stack_name(path), path, EXIT_INVALID, None, str(invalid))])
        raise typer.Exit(EXIT_INVALID) from None
    if fmt is ReportFormat.json:
        from ..plan.secret_values import SECRET_DIGEST_ENV

        digest = os.environ.get(SECRET_DIGEST_ENV)  # set by `gpufleet diff` for a base ref's plan
        emit_json(result.to_json(show_secrets, digest.encode() if digest else None))
    elif fmt is ReportFormat.table:
        from ..report.tables import print_plan

        out.print(f"stack file: {shown_path(path)}", markup=False, highlight=False)
        print_plan(out, result)
    else:
        from ..plan.batch import StackOutcome

        emit_report(fmt, [StackOutcome(result.stack, path, result.exit_code, result.to_json(), None)])
    raise typer.Exit(result.exit_code)


def shown_path(path: Path) -> str:
    """A path as a person types it from here: relative to the working directory."""
    return os.path.relpath(path.resolve(), Path.cwd().resolve())


def emit_report(fmt: ReportFormat, outcomes: Sequence[StackOutcome]) -> None:
    """Print the Markdown summary or the SARIF log of the outcomes on stdout."""
    from ..plan.policy_catalog import policy_catalog
    from ..report.markdown import markdown_report
    from ..report.sarif import repository_root, sarif_log

    catalog = policy_catalog()
    if fmt is ReportFormat.markdown:
        sys.stdout.write(markdown_report(outcomes, {row["name"]: row for row in catalog}))
    else:
        emit_json(sarif_log(outcomes, catalog, repository_root(Path.cwd())))


def plan_all(stacks_dir: Path, fmt: ReportFormat, jobs: int | None = None) -> int:
    from ..plan.batch import plan_stacks
    from ..stackfile import stack_names

    names = stack_names(stacks_dir) if stacks_dir.is_dir() else []
    if not names:
        err.print(f"error: --all found no Pulumi.<stack>.yaml in {stacks_dir}")
        return 2  # usage: nothing to plan
    lines, outcomes, worst = [], [], 0
    with progress(len(names)) as advance:
        for outcome in plan_stacks(stacks_dir, names, jobs):
            line = _summary_line(outcome)
            worst = max(worst, outcome.exit_code)
            lines.append(line)
            outcomes.append(outcome)
            if fmt is ReportFormat.table:
                # One line per stack at any width: user text printed literally, never wrapped or styled.
                out.print(_table_line(line), highlight=False, soft_wrap=True, markup=False)
            advance()
    if fmt is ReportFormat.json:
        emit_json(lines)
    elif fmt in REPORTS:
        emit_report(fmt, outcomes)
    return worst


def _summary_line(outcome: StackOutcome) -> dict[str, Any]:
    if outcome.plan is None:
        return {"stack": outcome.name, "exit": outcome.exit_code, "error": outcome.error}
    return {"stack": outcome.name, "exit": outcome.exit_code, "resources": len(outcome.plan["resources"]),
            "violations": len(outcome.plan["policies"]["violations"]),
            "unresolved_facts": len(outcome.plan["summary"].get("unresolved_facts", [])),
            "refusals": len(outcome.plan["summary"].get("refusals", [])),
            "max_hourly_usd": outcome.plan["summary"]["hourly_usd"]["max_on_demand"]}


def _table_line(line: dict[str, Any]) -> str:
    if "error" in line:
        # An invalid stack lists one problem per line: joined, so the stack keeps one line.
        first, *problems = [part.strip() for part in str(line["error"]).splitlines() if part.strip()] or [""]
        detail = " ".join([first, "; ".join(problems)]).strip()
    else:
        usd = line["max_hourly_usd"]
        cost = "max USD/h unpriced" if usd is None else f"max {usd:.2f} USD/h"
        detail = f"{line['resources']} resources, {line['violations']} violation(s), {cost}"
        if line["refusals"]:
            detail += f", {line['refusals']} refusal(s) (`up` stops)"
        if line["unresolved_facts"]:
            detail += f", {line['unresolved_facts']} unresolved fact(s) (`up` refuses)"
    return f"{line['stack']:<28} exit {line['exit']}  {detail}"
