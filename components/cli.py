"""The `gpufleet` command. Exit status: 0 clean, 1 a mandatory policy or check failed, 2 invalid input,
3 an internal error (one line; `--debug` anywhere on the command line prints the traceback)."""

from __future__ import annotations

import json
import sys
import traceback
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from .spec import SpecInvalid, stack_names, stack_path

app = typer.Typer(
    help="GPU clusters on AWS, Azure and Alibaba Cloud: plan offline, check policies and image pins. "
    "Exit status: 0 clean, 1 a mandatory policy failed, 2 invalid input, 3 an internal error "
    "(add --debug anywhere for its traceback).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
images_app = typer.Typer(help="Pinned CUDA driver images (images/lock.yaml).", no_args_is_help=True)
app.add_typer(images_app, name="images")

out = Console()
# Errors quote user text (field values, stack names): never read as rich markup or :emoji: codes.
err = Console(stderr=True, markup=False, emoji=False, highlight=False, soft_wrap=True)
EXIT_INTERNAL = 3
DEBUG_FLAG = "--debug"
DEFAULT_STACKS = Path(__file__).resolve().parent.parent / "stacks"
StacksDir = Annotated[Path, typer.Option("--stacks-dir", help="Directory of Pulumi.<stack>.yaml files.")]


class Format(str, Enum):
    table = "table"
    json = "json"


FormatOpt = Annotated[Format, typer.Option("--format", help="table for people, json for machines.")]


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def fail_invalid(invalid: SpecInvalid) -> None:
    err.print(f"error: {invalid}")
    raise typer.Exit(2)


@app.command()
def plan(
    stack: Annotated[str | None, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")] = None,
    stack_file: Annotated[Path | None, typer.Option("--stack-file", help="Path to a stack file.")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Plan every stack in the stacks directory.")] = False,
    fmt: FormatOpt = Format.table,
    stacks_dir: StacksDir = DEFAULT_STACKS,
) -> None:
    """Plan a stack offline under the mock engine: resources, fabric, policies, cost."""
    from .plan.planner import plan_stack
    from .render import print_plan

    if all_stacks:
        raise typer.Exit(plan_all(stacks_dir, fmt))
    if (stack is None) == (stack_file is None):
        err.print("error: give exactly one of --stack NAME, --stack-file PATH or --all")
        raise typer.Exit(2)
    path = stack_file if stack_file is not None else stack_path(stacks_dir, stack or "")
    if stack is not None and not path.is_file():
        err.print(f"error: no stack {stack!r} in {stacks_dir}; known: {', '.join(stack_names(stacks_dir))}")
        raise typer.Exit(2)
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
    from .plan.planner import EXIT_INVALID, plan_stack

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


@app.command()
def catalog(
    cloud: Annotated[str | None, typer.Option("--cloud", help="aws | azure | alicloud")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU model, e.g. H100")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Instance facts, fabric and prices, with their sources."""
    from .catalog import CLOUDS, load_catalog
    from .render import catalog_table

    if cloud is not None and cloud not in CLOUDS:
        err.print(f"error: --cloud must be one of {', '.join(CLOUDS)}, got {cloud!r}")
        raise typer.Exit(2)
    instances = load_catalog().instances(cloud, gpu)
    if fmt is Format.json:
        emit_json([i.model_dump(mode="json") for i in instances])
    else:
        out.print(catalog_table(instances))


@app.command()
def schema(
    images: Annotated[bool, typer.Option("--images", help="The schema of `gpufleet:images` (an image stack).")] = False,
) -> None:
    """JSON Schema of `gpufleet:cluster` (or of `gpufleet:images`), one branch per cloud chosen by `cloud`, for
    editors."""
    from .resolve import cluster_json_schema
    from .spec.images import images_json_schema

    emit_json(images_json_schema() if images else cluster_json_schema())


@app.command()
def fork(
    template: Annotated[str, typer.Argument(help="Stack to extend, e.g. aws-train-p5.")],
    new: Annotated[str, typer.Argument(help="Name of the new stack.")],
    settings: Annotated[list[str] | None, typer.Option("--set", help="path=value override, repeatable.")] = None,
    stacks_dir: StacksDir = DEFAULT_STACKS,
) -> None:
    """Write stacks/Pulumi.NEW.yaml extending TEMPLATE, validate it, print the next commands."""
    from .fork import fork as fork_stack

    if not stack_path(stacks_dir, template).is_file():
        err.print(f"error: no stack {template!r} in {stacks_dir}; known: {', '.join(stack_names(stacks_dir))}")
        raise typer.Exit(2)
    try:
        path = fork_stack(template, new, settings or [], stacks_dir)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    out.print(f"wrote {path}\nnext:\n  gpufleet plan --stack {new}\n  pulumi stack init {new}\n"
              f"  pulumi up --stack {new} --policy-pack policies", highlight=False)


@images_app.command("check")
def images_check(
    profile: Annotated[str | None, typer.Option("--profile", help="Check one profile only.")] = None,
    on: Annotated[str | None, typer.Option("--on", help="Judge end of life on this date (YYYY-MM-DD).")] = None,
    lock_file: Annotated[Path | None, typer.Option("--lock", help="Lock file (default images/lock.yaml).")] = None,
    fmt: FormatOpt = Format.table,
    stacks_dir: StacksDir = DEFAULT_STACKS,
) -> None:
    """Verify images/lock.yaml: fabric manager = driver, CUDA minimum, branch life, image ids, regions."""
    from .images_check import check_images

    try:
        when = date.fromisoformat(on) if on else date.today()
    except ValueError:
        err.print(f"error: --on must be a date like 2026-11-21, got {on!r}")
        raise typer.Exit(2) from None
    try:
        problems = check_images(stacks_dir, when, profile, lock_file)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    if fmt is Format.json:
        emit_json({"ok": not problems, "on": when.isoformat(), "problems": problems})
    elif problems:
        out.print(_problem_table(problems))
    else:
        out.print(f"images/lock.yaml: every profile passes on {when.isoformat()}")
    raise typer.Exit(1 if problems else 0)


@images_app.command("pin")
def images_pin(
    stack: Annotated[str, typer.Option("--stack", help="The image stack whose bake to pin, e.g. aws-images.")],
    outputs: Annotated[Path | None, typer.Option(
        "--outputs", help="Its outputs as `pulumi stack output --json` prints them (default: run that).")] = None,
    lock_file: Annotated[Path | None, typer.Option("--lock", help="Lock file (default images/lock.yaml).")] = None,
) -> None:
    """Write the image ids a bake produced (the image stack's outputs) into images/lock.yaml; nothing else changes."""
    from .lock import DEFAULT_LOCK_PATH
    from .lock.pin import PinError, parse_json, pin, stack_outputs

    try:
        if outputs is None:
            raw = stack_outputs(stack)
        elif not outputs.is_file():
            raise PinError(f"--outputs: {outputs} is not a readable file")
        else:
            raw = parse_json(outputs.read_text(), f"--outputs {outputs}")
        pinned = pin(lock_file or DEFAULT_LOCK_PATH, raw)
    except PinError as exc:
        err.print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(2) from None
    for p in pinned:
        out.print(f"pinned {p.profile} {p.cloud}/{p.region}: {p.image_id} (was {p.previous or 'unbaked'})",
                  highlight=False)
    out.print("next: gpufleet images check, then gpufleet plan / pulumi up of the clusters on this profile",
              highlight=False)


def _problem_table(problems: list[dict[str, str]]) -> Any:
    from .render import table

    return table("Image lock problems", ["profile", "field", "problem"],
                 [(p["profile"], p["field"], p["message"]) for p in problems])


@app.command()
def policies(fmt: FormatOpt = Format.table) -> None:
    """Every rule of the policy pack: name, level, cloud, resource types, CIS / Checkov match."""
    from .plan.policy_runner import policy_catalog
    from .render import table

    rules = policy_catalog()
    if fmt is Format.json:
        emit_json(rules)
        return
    out.print(table("gpufleet policy pack", ["name", "level", "cloud", "resource types", "matches", "description"],
                    [(r["name"], r["level"], r["cloud"], "\n".join(r.get("resource_types", [])),
                      r.get("cis") or r.get("checkov") or "", r["description"]) for r in rules]))


@app.command("policy-config")
def policy_config(
    stack: Annotated[str, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")],
    stacks_dir: StacksDir = DEFAULT_STACKS,
) -> None:
    """Print the --policy-pack-config JSON for `pulumi up --policy-pack policies` on this stack."""
    from .plan.policy_config import policy_pack_config
    from .program import prepare
    from .spec import load_stack

    path = stack_path(stacks_dir, stack)
    if not path.is_file():
        err.print(f"error: no stack {stack!r} in {stacks_dir}; known: {', '.join(stack_names(stacks_dir))}")
        raise typer.Exit(2)
    try:
        config = load_stack(path, stacks_dir)
        prepared = prepare(config)  # as `gpufleet plan` does, so both print the same pack config
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    emit_json(policy_pack_config(config, prepared, stack))


def main() -> None:
    """Run the CLI; an unexpected exception exits 3 (1 means a policy failed), with its traceback on --debug."""
    args = sys.argv[1:]
    debug = DEBUG_FLAG in args
    try:
        app(args=[arg for arg in args if arg != DEBUG_FLAG], prog_name="gpufleet")
    except Exception as exc:  # the one place that turns any internal error into exit 3
        if debug:
            traceback.print_exc()
        else:
            err.print(
                f"internal error: {type(exc).__name__}: {exc}; run the same command with {DEBUG_FLAG} and report "
                "the traceback as an issue of the gpufleet project"
            )
        sys.exit(EXIT_INTERNAL)
