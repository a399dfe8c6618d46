"""`gpufleet quote`: the catalog types across clouds that hold N GPUs of one model, cheapest first, and the
fork command line of a chosen row."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer

from .app import Format, FormatOpt, StacksDir, app, emit_json, fail_invalid, out, project_stacks


class CapacityChoice(str, Enum):
    on_demand = "on-demand"
    spot = "spot"


def _usd(value: float | None) -> str:
    return f"{value:,.2f}" if value is not None else "unpriced"


def _fabric(row: Any) -> str:
    if row.fabric == "none":
        return "none"
    return f"{row.fabric} {row.fabric_gbps:g} Gb/s" if row.fabric_gbps is not None else row.fabric


def _group(row: Any) -> str:
    return {True: "yes", False: "NO", None: "-"}[row.one_fabric_group]


@app.command()
def quote(
    gpu: Annotated[str, typer.Option("--gpu", help="GPU model, e.g. H100 (any case).")],
    count: Annotated[int, typer.Option("--count", help="GPUs wanted.")],
    capacity: Annotated[CapacityChoice, typer.Option("--capacity", help="Price nodes on demand or on spot.")] = (
        CapacityChoice.on_demand),
    region: Annotated[str | None, typer.Option("--region", help="One region (default: the image lock's).")] = None,
    cloud: Annotated[str | None, typer.Option("--cloud", help="aws | azure | alicloud")] = None,
    fmt: FormatOpt = Format.table,
    fork: Annotated[str | None, typer.Option("--fork", help="Print the fork command of a row as stack NEW.")] = None,
    pick: Annotated[int | None, typer.Option("--pick", help="Row number (#) to fork; default 1, the cheapest.")] = None,
    stacks_dir: StacksDir = None,
) -> None:
    """Catalog types that hold COUNT GPUs of a model across the clouds, per region, by hourly cost."""
    from ..catalog import load_catalog
    from ..catalog.quote import EXPECTED_RULE
    from ..catalog.quote import quote as make_quote
    from ..clouds.registry import CLOUDS
    from ..lock import load_lock
    from ..stackfile import SpecError, SpecInvalid

    lock = load_lock()
    lock_regions = {c: lock.regions(c) for c in CLOUDS}
    try:
        result = make_quote(load_catalog(), lock_regions, gpu, count, capacity.value, region, cloud)
        if pick is not None and fork is None:
            raise SpecInvalid([SpecError("--pick", "chooses the row to fork: give --fork NEW too")], source="quote")
        line, number = None, pick or 1
        if fork is not None:
            from ..quote_fork import fork_line  # reads every stack: only a quote that forks loads it

            if not 1 <= number <= len(result.rows):
                raise SpecInvalid([SpecError("--pick", f"must be a row number from 1 to {len(result.rows)}, "
                                                       f"got {number}")], source="quote")
            line = fork_line(result.rows[number - 1], fork, capacity.value, project_stacks(stacks_dir))
    except SpecInvalid as invalid:
        fail_invalid(invalid)
    if fmt is Format.json:
        data = result.to_json()
        if line is not None and fork is not None:
            data["fork"] = {"row": number, "template": line.template, "settings": list(line.settings),
                            "zone_lookup": line.zone_lookup, "command": line.command(fork), "notes": list(line.notes)}
        emit_json(data)
        return
    from rich.markup import escape  # the table's: JSON output loads nothing of rich

    _print_table(result, EXPECTED_RULE[capacity.value])
    if line is not None and fork is not None:
        chosen = result.rows[number - 1]
        where = chosen.region + (f", zone {chosen.zone_id}" if chosen.zone_id else "")
        out.print(f"\nfork of row {number} ({escape(chosen.instance_type)} in {escape(where)}):", highlight=False)
        out.print(escape(line.command(fork, multiline=True)), highlight=False, soft_wrap=True)
        for note in line.notes:
            out.print(f"note: {escape(note)}", highlight=False)


def _print_table(result: Any, rule: str) -> None:
    from rich.markup import escape

    from ..report.tables import table

    # The zone ID column only where a row is priced per zone (AWS spot): the price is that zone's, by its ID.
    zoned = any(r.zone_id for r in result.rows)
    # The file and commit only: the spot AZ detail of each source is in --format json.
    rows = [
        (number, r.cloud, r.instance_type, r.region, *([r.zone_id or "-"] if zoned else []),
         f"{r.nodes} x {r.gpus_per_node}", _fabric(r), _usd(r.on_demand_usd), _usd(r.expected_usd), _group(r),
         f"{r.price_source.split(';')[0]} ({r.price_date})" if r.price_source else "-", "; ".join(r.notes))
        for number, r in enumerate(result.rows, start=1)
    ]
    title = (f"{result.count} x {result.gpu} ({result.capacity}): USD/h for all nodes, cheapest first, unpriced last; "
             f"{rule}")
    zone = ["zone ID"] if zoned else []
    out.print(table(title, ["#", "cloud", "type", "region", *zone, "nodes x GPUs", "fabric", "on-demand", "expected",
                            "one group", "price source (read)", "notes"], rows,
                    key=("#", "cloud", "type", "region", *zone),
                    minor=("price source (read)", "one group", "fabric", "notes")))
    for pair in result.not_offered:
        out.print(f"not offered: {escape(pair)}", highlight=False)
