"""`gpufleet images`: check and pin the image lock."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer

from .app import Format, FormatOpt, StacksDir, emit_json, err, fail_invalid, images_app, out, project_stacks


@images_app.command("check")
def images_check(
    profile: Annotated[str | None, typer.Option("--profile", help="Check one profile only.")] = None,
    on: Annotated[str | None, typer.Option("--on", help="Judge end of life on this date (YYYY-MM-DD).")] = None,
    lock_file: Annotated[Path | None, typer.Option("--lock", help="Lock file (default images/lock.yaml).")] = None,
    fmt: FormatOpt = Format.table,
    stacks_dir: StacksDir = None,
) -> None:
    """Verify images/lock.yaml: fabric manager = driver, CUDA minimum, branch life, image ids, regions, in-cluster
    pins (digests noted where missing; each AKS stack's driver container pinned)."""
    from ..images_check import images_report
    from ..stackfile import SpecInvalid

    try:
        when = date.fromisoformat(on) if on else date.today()
    except ValueError:
        err.print(f"error: --on must be a date like 2026-11-21, got {on!r}")
        raise typer.Exit(2) from None
    try:
        stacks_dir = project_stacks(stacks_dir)
        problems, notes = images_report(stacks_dir, when, profile, lock_file)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    # The file judged: the --lock given, else the shipped lock (named relative to the repository).
    lock_name = str(lock_file) if lock_file else "images/lock.yaml"
    if fmt is Format.json:
        emit_json({"ok": not problems, "lock": lock_name, "on": when.isoformat(), "problems": problems,
                   "notes": notes})
        raise typer.Exit(1 if problems else 0)
    for note in notes:
        err.print(f"note: {note['profile']}: {note['field']}: {note['message']}", highlight=False, markup=False)
    if problems:
        out.print(_problem_table(problems))
        err.print(f"error: {lock_name}: {len(problems)} problem(s) on {when.isoformat()}")
    else:
        out.print(f"{lock_name}: every profile passes on {when.isoformat()}")
    raise typer.Exit(1 if problems else 0)


@images_app.command("pin")
def images_pin(
    stack: Annotated[str, typer.Option("--stack", help="The image stack whose bake to pin, e.g. aws-images.")],
    outputs: Annotated[Path | None, typer.Option(
        "--outputs", help="Its outputs as `pulumi stack output --json` prints them (default: run that); their "
        "`stack` must be --stack.")] = None,
    lock_file: Annotated[Path | None, typer.Option("--lock", help="Lock file (default images/lock.yaml).")] = None,
) -> None:
    """Write the image ids a bake produced (the image stack's outputs) into images/lock.yaml; nothing else changes."""
    from ..lock import DEFAULT_LOCK_PATH
    from ..lock.pin import PinError, parse_json, pin, stack_outputs

    try:
        if outputs is None:
            raw = stack_outputs(stack)
        elif not outputs.is_file():
            raise PinError(f"--outputs: {outputs} is not a readable file")
        else:
            raw = parse_json(outputs.read_text(), f"--outputs {outputs}")
        pinned = pin(lock_file or DEFAULT_LOCK_PATH, raw, stack, made_by=_execution_images)
    except PinError as exc:
        err.print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(2) from None
    for p in pinned:
        mode = f" ({p.boot_mode})" if p.boot_mode else ""
        out.print(f"pinned {p.profile} {p.cloud}/{p.region}{mode}: {p.image_id} (was {p.previous or 'unbaked'})",
                  highlight=False)
    out.print("next: gpufleet images check, then gpufleet plan / pulumi up of the clusters on this profile",
              highlight=False)


def _problem_table(problems: list[dict[str, str]]) -> Any:
    from ..report.tables import table

    return table("Image lock problems", ["profile", "field", "problem"],
                 [(p["profile"], p["field"], p["message"]) for p in problems])


def _execution_images(bake: Any) -> dict[str, str]:
    """Region -> image id an Alibaba bake's execution made, read from the execution with the caller's credentials."""
    from ..lock.pin import PinError
    from ..sources.alicloud import default_ecs_client
    from ..sources.alicloud_execution import execution_images
    from ..sources.http import SourceError

    try:
        return execution_images(default_ecs_client, bake.regions, bake.execution_id).images
    except SourceError as error:
        raise PinError(f"outputs.execution_id: {error}") from None
