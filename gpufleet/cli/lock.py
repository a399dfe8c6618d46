"""`gpufleet lock resolve`: read the lock's facts from their sources (apt, downloads, registries, cloud APIs)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .app import Format, FormatOpt, StacksDir, emit_json, err, fail_invalid, lock_app, out, project_stacks


class FactKind(str, Enum):
    """The kinds `--only` reads (DESIGN.md, "Resolve"); addons: managed Kubernetes versions and add-ons."""

    apt = "apt"
    downloads = "downloads"
    images = "images"
    addons = "addons"
    base = "base"


@lock_app.command("resolve")
def lock_resolve(
    lock_file: Annotated[Path | None, typer.Option("--lock", help="Lock file (default images/lock.yaml); the facts "
                                                   "are written beside it (lock.resolved.yaml).")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="Read one profile's facts only.")] = None,
    only: Annotated[list[FactKind] | None, typer.Option(
        "--only", help="Read one kind of fact only (repeatable); addons: managed Kubernetes versions and add-ons.",
    )] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 when a source moved (a new default add-on, a new digest behind a "
        "tag, a retired version) or a fact cannot be read: for a scheduled CI job.")] = False,
    fmt: FormatOpt = Format.table,
    stacks_dir: StacksDir = None,
) -> None:
    """Read every fact the lock needs from its source with your network and credentials, and record each with where
    and when it was read. Exit 0: all read (or, with --check, nothing moved); 1: a fact could not be read or does not
    match the lock, or (--check) a source moved; 2: invalid input."""
    from ..images_check import shipped_stacks
    from ..lock import DEFAULT_LOCK_PATH, load_lock
    from ..lock.facts_loader import load_facts
    from ..lock_resolve import resolve, selected_needs, write_facts
    from ..stackfile import SpecError, SpecInvalid

    path = lock_file or DEFAULT_LOCK_PATH
    try:
        lock = load_lock(path)
        if profile is not None and profile not in lock.profiles:
            raise SpecInvalid([SpecError("--profile", f"unknown profile {profile!r}; the lock has: "
                                         f"{', '.join(sorted(lock.profiles))}")])
        kinds = {kind.value for kind in only} if only else None
        stacks_dir = project_stacks(stacks_dir)
        needs = selected_needs(path, shipped_stacks(stacks_dir), kinds, profile)
        previous = load_facts(path)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    run = resolve(needs, previous)
    written = None if check else write_facts(path, run.facts)
    failed_or_moved = bool(run.failed) or (check and bool(run.moved))
    if fmt is Format.json:
        emit_json({"ok": not failed_or_moved, "read": run.read, "needs": len(needs), "failed": run.failed,
                   "moved": run.moved, "written": str(written) if written else None})
        raise typer.Exit(1 if failed_or_moved else 0)
    for key, why in sorted(run.moved.items()):
        out.print(f"{'moved' if check else 'recorded'}: {key} ({why})", highlight=False, markup=False)
    for field, why in sorted(run.failed.items()):
        err.print(f"error: {field}: {why}")
    summary = f"{run.read} of {len(needs)} facts read"
    out.print(f"{summary}; {'nothing written (--check)' if check else f'written to {written}'}", highlight=False,
              markup=False)
    raise typer.Exit(1 if failed_or_moved else 0)
