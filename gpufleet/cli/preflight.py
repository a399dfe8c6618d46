"""`gpufleet preflight`: the offline plan, then read-only questions to the stack's cloud account
(gpufleet/preflight/runner.py does the work; the cloud SDKs load only here, never for `plan`)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .app import ReportFormat, StacksDir, app, emit_json, err, existing_stack, out, project_stacks

if TYPE_CHECKING:
    from gpufleet.preflight.runner import PreflightOutcome

FormatOpt = Annotated[ReportFormat, typer.Option(
    "--format",
    help="table for people; json: per stack {stack, cloud, region, exit, findings [{check, field, blocking, says, "
    "fix}], blocking, advisory, error} (a list with --all); markdown for a job summary or PR comment; sarif "
    "(SARIF 2.1.0) with each finding on its field's line. The exit status is the same in every format.",
)]


@app.command()
def preflight(
    stack: Annotated[str | None, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")] = None,
    stack_file: Annotated[Path | None, typer.Option("--stack-file", help="Path to a stack file.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Every stack in the stacks directory.")] = False,
    fmt: FormatOpt = ReportFormat.table,
    stacks_dir: StacksDir = None,
) -> None:
    """Before `pulumi up`: plan offline, then ask the account read-only (quotas, types offered in the zones,
    reservations, brought resources, pinned images, account setup) with your usual credentials. Exit 0 nothing
    blocks, 1 a blocking finding, 2 invalid stack / no credentials / access refused, 3 internal error."""
    from gpufleet.preflight.runner import preflight_stack

    # The SDKs log each failed credential source with a traceback (alibabacloud_credentials gives its logger
    # "credentials" a stream handler of its own); what stops preflight is said once, in words, by the cloud's part.
    logging.getLogger().addHandler(logging.NullHandler())
    logging.getLogger("credentials").disabled = True
    if all_stacks == (stack is not None or stack_file is not None) or (stack is not None and stack_file is not None):
        err.print("error: give exactly one of --stack NAME, --stack-file PATH or --all")
        raise typer.Exit(2)
    if stack_file is None:
        stacks_dir = project_stacks(stacks_dir)
    if all_stacks:
        from ..stackfile import stack_names

        names = stack_names(stacks_dir) if stacks_dir.is_dir() else []
        if not names:
            err.print(f"error: --all found no Pulumi.<stack>.yaml in {stacks_dir}")
            raise typer.Exit(2)
        outcomes = [preflight_stack(existing_stack(stacks_dir, name), stacks_dir) for name in names]
    else:
        path = stack_file if stack_file is not None else existing_stack(stacks_dir, stack or "")
        outcomes = [preflight_stack(path, stacks_dir)]
    _emit(fmt, outcomes, all_stacks)
    raise typer.Exit(max(outcome.exit_code for outcome in outcomes))


def _emit(fmt: ReportFormat, outcomes: Sequence[PreflightOutcome], many: bool) -> None:
    from gpufleet.preflight.report import markdown_report, print_outcome

    if fmt is ReportFormat.table:
        for outcome in outcomes:
            print_outcome(out, err, outcome)
        return
    for outcome in outcomes:  # the reason a stack stopped, where people read, whatever the document
        if outcome.error is not None:
            err.print(f"error: {outcome.stack}: {outcome.error}")
    if fmt is ReportFormat.json:
        documents = [outcome.to_json() for outcome in outcomes]
        emit_json(documents if many else documents[0])
    elif fmt is ReportFormat.markdown:
        sys.stdout.write(markdown_report(outcomes))
    else:
        from gpufleet.preflight.sarif import sarif_log
        from gpufleet.report.sarif import repository_root

        emit_json(sarif_log(outcomes, repository_root(Path.cwd())))
