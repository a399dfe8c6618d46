"""`gpufleet plan`: one stack, a stack file, or every stack of a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..spec import SpecInvalid, stack_names, stack_path
from .app import DEFAULT_STACKS, Format, FormatOpt, StacksDir, app, emit_json, err, existing_stack, fail_invalid, out


@app.command()
def plan(
    stack: Annotated[str | None, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")] = None,
    stack_file: Annotated[Path | None, typer.Option("--stack-file", help="Path to a stack file.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Plan every stack in the stacks directory.")] = False,
    fmt: FormatOpt = Format.table,
    stacks_dir: StacksDir = DEFAULT_STACKS,
) -> None:
    """Plan a stack offline under the mock engine: resources, fabric, policies, cost."""
    from ..plan.planner import plan_stack
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
        fail_invalid(invalid)
    if fmt is Format.json:
        emit_json(result.to_json())
    else:
        print_plan(out, result)
    raise typer.Exit(result.exit_code)


def plan_all(stacks_dir: Path, fmt: Format) -> int:
    from ..plan.planner import EXIT_INVALID, plan_stack

    names = stack_names(stacks_dir) if stacks_dir.is_dir() else []
    if not names:
        err.print(f"error: --all found no Pulumi.<stack>.yaml in {stacks_dir}")
        return EXIT_INVALID
    lines, worst = [], 0
    for name in names:
        try:
            result = plan_stack(stack_path(stacks_dir, name), stacks_dir)
            code = result.exit_code
            line = {"stack": name, "exit": code, "resources": len(result.resources),
                    "violations": len(result.policies["violations"]),
                    "max_hourly_usd": result.summary["hourly_usd"]["max_on_demand"]}
        except SpecInvalid as invalid:
            code = EXIT_INVALID
            line = {"stack": name, "exit": code, "error": str(invalid)}
        worst = max(worst, code)
        lines.append(line)
        if fmt is Format.table:
            detail = line.get("error") or (
                f"{line['resources']} resources, {line['violations']} violation(s), "
                f"max {line['max_hourly_usd']:.2f} USD/h"
            )
            out.print(f"{name:<28} exit {code}  {detail}", highlight=False, soft_wrap=True, markup=False)
    if fmt is Format.json:
        emit_json(lines)
    return worst
