"""`gpufleet plan`: one stack, a stack file, or every stack of a directory."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from ..plan.record import SHOW_SECRETS_ENV
from ..report.outcome import StackOutcome
from ..spec import SpecInvalid, stack_names, stack_path
from .app import DEFAULT_STACKS, ReportFormat, ReportFormatOpt, StacksDir, app, emit_json, err, existing_stack, out

REPORTS = (ReportFormat.markdown, ReportFormat.sarif)


@app.command()
def plan(
    stack: Annotated[str | None, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")] = None,
    stack_file: Annotated[Path | None, typer.Option("--stack-file", help="Path to a stack file.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Plan every stack in the stacks directory.")] = False,
    fmt: ReportFormatOpt = ReportFormat.table,
    stacks_dir: StacksDir = DEFAULT_STACKS,
    show_secrets: Annotated[bool, typer.Option(
        "--show-secrets", envvar=SHOW_SECRETS_ENV,
        help="Print secret inputs in the JSON plan (else [secret], as `pulumi preview`).")] = False,
) -> None:
    """Plan a stack offline under the mock engine: resources, fabric, policies, cost."""
    from ..plan.planner import EXIT_INVALID, plan_stack, stack_name
    from ..render import print_plan

    if all_stacks:
        raise typer.Exit(plan_all(stacks_dir, fmt))
    if (stack is None) == (stack_file is None):
        err.print("error: give exactly one of --stack NAME, --stack-file PATH or --all")
        raise typer.Exit(2)
    path = stack_file if stack_file is not None else existing_stack(stacks_dir, stack or "")
    try:
        result = plan_stack(path, stacks_dir if stack is not None else None)
    except SpecInvalid as invalid:
        err.print(f"error: {invalid}")
        if fmt in REPORTS:  # CI still gets a report to publish, naming the invalid stack
            emit_report(fmt, [StackOutcome(stack_name(path), path, EXIT_INVALID, None, str(invalid))])
        raise typer.Exit(EXIT_INVALID) from None
    if fmt is ReportFormat.json:
        emit_json(result.to_json(show_secrets))
    elif fmt is ReportFormat.table:
        print_plan(out, result)
    else:
        emit_report(fmt, [StackOutcome(result.stack, path, result.exit_code, result.to_json(), None)])
    raise typer.Exit(result.exit_code)


def emit_report(fmt: ReportFormat, outcomes: Sequence[StackOutcome]) -> None:
    """Print the Markdown summary or the SARIF log of the outcomes on stdout."""
    from ..plan.policy_runner import policy_catalog
    from ..report.markdown import markdown_report
    from ..report.sarif import repository_root, sarif_log

    catalog = policy_catalog()
    if fmt is ReportFormat.markdown:
        sys.stdout.write(markdown_report(outcomes, {row["name"]: row for row in catalog}))
    else:
        emit_json(sarif_log(outcomes, catalog, repository_root(Path.cwd())))


def plan_all(stacks_dir: Path, fmt: ReportFormat) -> int:
    from ..plan.planner import EXIT_INVALID, plan_stack

    names = stack_names(stacks_dir) if stacks_dir.is_dir() else []
    if not names:
        err.print(f"error: --all found no Pulumi.<stack>.yaml in {stacks_dir}")
        return EXIT_INVALID
    lines, outcomes, worst = [], [], 0
    for name in names:
        path = stack_path(stacks_dir, name)
        try:
            result = plan_stack(path, stacks_dir)
            code = result.exit_code
            outcomes.append(StackOutcome(name, path, code, result.to_json(), None))
            line = {"stack": name, "exit": code, "resources": len(result.resources),
                    "violations": len(result.policies["violations"]),
                    "max_hourly_usd": result.summary["hourly_usd"]["max_on_demand"]}
        except SpecInvalid as invalid:
            code = EXIT_INVALID
            outcomes.append(StackOutcome(name, path, code, None, str(invalid)))
            line = {"stack": name, "exit": code, "error": str(invalid)}
        worst = max(worst, code)
        lines.append(line)
        if fmt is ReportFormat.table:
            detail = line.get("error") or (
                f"{line['resources']} resources, {line['violations']} violation(s), " +
                ("max USD/h unpriced" if line["max_hourly_usd"] is None else f"max {line['max_hourly_usd']:.2f} USD/h")
            )
            out.print(f"{name:<28} exit {code}  {detail}", highlight=False, soft_wrap=True, markup=False)
    if fmt is ReportFormat.json:
        emit_json(lines)
    elif fmt in REPORTS:
        emit_report(fmt, outcomes)
    return worst
