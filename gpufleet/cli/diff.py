"""`gpufleet diff`: the offline plan of each stack at a git ref against the work tree's."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from .app import StacksDir, app, emit_json, err, fail_invalid, out, progress, project_stacks


class DiffFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"


@app.command()
def diff(
    base: Annotated[str, typer.Option("--base", help="Git ref to compare with (a branch, tag, commit, HEAD~1). "
                                    "Runs that ref's own code on this machine (in a git archive export, "
                                    "with a scrubbed environment: no cloud credentials); diff only refs you trust.")]
    = "HEAD",
    stack: Annotated[str | None, typer.Option("--stack", help="Diff this stack only.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Diff every stack on either side (the default).")]
    = False,
    fmt: Annotated[DiffFormat, typer.Option("--format", help="table for people, json for machines, markdown for "
                                                            "a pull request.")] = DiffFormat.table,
    stacks_dir: StacksDir = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", min=1, help="Plan the work tree's stacks in up to N worker processes (default: half the CPUs; the "
                              "base's plans take the rest; 1: in this one).")] = None,
) -> None:
    """Plan each stack at git ref BASE (with BASE's code and stacks) and in the work tree, offline, and print
    per stack: resources added, removed and changed (input paths, before -> after, secrets masked), GPU and
    USD/h deltas (unpriced stays unpriced), violations new and fixed, exit status before and after.

    BASE's code executes on this machine (a git archive export, its environment scrubbed of credentials and
    tokens): diff only refs you trust.

    Exit status (the work tree's verdict; a base that does not plan is reported, not fatal):
    0 no mandatory violation in the work tree;
    1 a stack in the work tree fails a mandatory policy, as `gpufleet plan`;
    2 invalid input: not a git work tree, unknown ref or stack, a stack file invalid in the work tree;
    3 an internal error.
    """
    from ..plan.diff_refs import diff_against
    from ..report.diff_view import markdown_diff, print_diff
    from ..stackfile import SpecInvalid

    if stack is not None and all_stacks:
        err.print("error: give --stack NAME or --all, not both")
        raise typer.Exit(2)
    from ..project import project_root

    stacks_dir = project_stacks(stacks_dir)
    try:
        report = diff_against(project_root(stacks_dir), base, [stack] if stack is not None else None, progress,
                              stacks_dir, jobs)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    if fmt is DiffFormat.json:
        emit_json(report.to_json())
    elif fmt is DiffFormat.markdown:
        sys.stdout.write(markdown_diff(report))
    else:
        print_diff(out, report)
    raise typer.Exit(report.exit_code)
