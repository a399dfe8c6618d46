"""Commands about the policy pack: its rules, and the pack config for `pulumi up`."""

from __future__ import annotations

from typing import Annotated

import typer

from .app import Format, FormatOpt, StacksDir, app, emit_json, existing_stack, fail_invalid, out, project_stacks


@app.command()
def policies(fmt: FormatOpt = Format.table) -> None:
    """Every rule of the policy pack: name, level, cloud, resource types, CIS / Checkov match."""
    from ..plan.policy_catalog import policy_catalog
    from ..report.tables import table

    rules = policy_catalog()
    if fmt is Format.json:
        emit_json(rules)
        return
    out.print(table("gpufleet policy pack", ["name", "level", "cloud", "resource types", "matches", "description"],
                    [(r["name"], r["level"], r["cloud"], "\n".join(r.get("resource_types", [])),
                      r.get("cis") or r.get("checkov") or "", r["description"]) for r in rules],
                    key=("name",), minor=("matches", "resource types", "cloud")))


@app.command("policy-config")
def policy_config(
    stack: Annotated[str, typer.Option("--stack", help="Stack name: stacks/Pulumi.<stack>.yaml.")],
    stacks_dir: StacksDir = None,
) -> None:
    """Print the --policy-pack-config JSON for `pulumi up --policy-pack policies` on this stack."""
    from ..pack_config.derive import policy_pack_config
    from ..pack_config.floor import bound_stack
    from ..prepare import prepare
    from ..stackfile import SpecInvalid, load_stack

    stacks_dir = project_stacks(stacks_dir)
    path = existing_stack(stacks_dir, stack)
    try:
        config = load_stack(path, stacks_dir)
        prepared = prepare(config)  # as `gpufleet plan` does, so both print the same pack config
        pack_config = policy_pack_config(config, prepared, bound_stack(path))
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    emit_json(pack_config)
