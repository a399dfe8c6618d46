"""Commands for writing stacks: the instance catalog, the stack schema, and fork."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import Format, FormatOpt, StacksDir, app, emit_json, err, existing_stack, fail_invalid, out, project_stacks


@app.command()
def catalog(
    cloud: Annotated[str | None, typer.Option("--cloud", help="aws | azure | alicloud")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU model, e.g. H100")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Instance facts, fabric and prices, with their sources."""
    from ..catalog import CLOUDS, load_catalog, load_mig_facts
    from ..report.tables import catalog_table

    if cloud is not None and cloud not in CLOUDS:
        err.print(f"error: --cloud must be one of {', '.join(CLOUDS)}, got {cloud!r}")
        raise typer.Exit(2)
    catalog_rows = load_catalog()
    instances = catalog_rows.instances(cloud, gpu)
    if gpu is not None and not catalog_rows.instances(None, gpu):  # as `quote` refuses it: a typo is not "none"
        from ..catalog.quote import gpu_models

        err.print(f"error: --gpu: no catalog type has GPU model {gpu!r}; known: {', '.join(gpu_models(catalog_rows))}")
        raise typer.Exit(2)
    mig = load_mig_facts()
    if fmt is Format.json:
        # The GPU's MIG profiles (mig.yaml) beside its other facts; empty where the GPU has no MIG.
        emit_json([{**row, "gpu": {**row["gpu"], "mig_profiles": sorted(facts.profiles) if facts else []}}
                   for i in instances for row in [i.model_dump(mode="json")] for facts in [mig.of(i.gpu)]])
    else:
        out.print(catalog_table(instances, mig=mig))


@app.command()
def schema(
    images: Annotated[bool, typer.Option("--images", help="The schema of `gpufleet:images` (an image stack).")] = False,
    stack_file: Annotated[bool, typer.Option(
        "--stack-file", help="Schema of a whole stack file (Pulumi's keys, provider keys, every gpufleet key), "
        "as checked in at schemas/stack-file.schema.json.")] = False,
) -> None:
    """JSON Schema of `gpufleet:cluster` (one branch per cloud, chosen by `cloud`), of `gpufleet:images`, or of a
    whole stack file, for editors (yaml-language-server)."""
    if stack_file:
        from ..stackfile.json_schema import stack_file_json_schema

        emit_json(stack_file_json_schema())
        return
    if images:  # the image stack's model and checks: only its schema loads them
        from ..stackfile.image_stack import images_json_schema

        emit_json(images_json_schema())
        return
    from ..resolve import cluster_json_schema

    emit_json(cluster_json_schema())


@app.command()
def fork(
    template: Annotated[str, typer.Argument(help="Stack to extend, e.g. aws-train-p5.")],
    new: Annotated[str, typer.Argument(help="Name of the new stack.")],
    settings: Annotated[list[str] | None, typer.Option("--set", metavar="PATH=VALUE",
                                                       help="An override, repeatable.")] = None,
    stacks_dir: StacksDir = None,
) -> None:
    """Write stacks/Pulumi.NEW.yaml extending TEMPLATE, validate it, print the next commands."""
    from ..fork import fork as fork_stack
    from ..stackfile import SpecInvalid

    given = stacks_dir
    stacks_dir = project_stacks(stacks_dir)
    existing_stack(stacks_dir, template)
    # The next commands run from here: they name the stack folder unless it is the one they would find.
    where = f" --stacks-dir {given}" if given is not None and given.resolve() != _project_stacks_here() else ""
    try:
        path, result = fork_stack(template, new, settings or [], stacks_dir)
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    if result.mandatory_failed:
        # Written (the user edits it from here), but it would not deploy: say which rules fail and exit 1.
        violations = result.policies.get("violations", [])
        failed = sorted({v["policy"] for v in violations if v["level"] == "mandatory"})
        err.print(f"wrote {path}, but it fails mandatory policies: {', '.join(failed)}; see "
                  f"`gpufleet plan --stack {new}{where}` and fix it before `pulumi up`", highlight=False)
        raise typer.Exit(result.exit_code)
    out.print(f"wrote {path}\nnext:\n  gpufleet plan --stack {new}{where}\n"
              f"  gpufleet policy-config --stack {new}{where} > policy-config-{new}.json\n"
              f"  gpufleet preflight --stack {new}{where}    # read-only questions to the account\n"
              f"  pulumi stack init {new}\n"
              f"  pulumi up --stack {new} --policy-pack policies --policy-pack-config policy-config-{new}.json",
              highlight=False, soft_wrap=True)  # commands whole, never wrapped at the terminal's width


def _project_stacks_here() -> Path | None:
    from ..project import find_project

    project = find_project(Path.cwd())
    return project.stacks_dir.resolve() if project is not None else None
