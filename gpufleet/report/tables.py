"""Rich tables for people; the JSON forms live with the data they print.

Cells and names come from stack files and policy messages: they are printed as text, never as markup."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from .words import cell_text

REVIEW_TITLES = {"ingress": "Ingress: who can reach what", "exposure": "Exposure: public addresses and endpoints",
                 "grants": "Grants, per identity", "sizes": "Sizes", "prices": "Prices and budgets"}

if TYPE_CHECKING:  # types only: `catalog`, `quote` and `policies` print tables without loading the planner
    from ..catalog import InstanceType, MigFacts
    from ..plan.planner import PlanResult
    from ..plan.record import RecordedResource
    from .review.model import ReviewLine


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], key: Sequence[str] = (),
          minor: Sequence[str] = ()) -> FittedTable:
    """A table that never cuts a value. Its `key` columns (what a row is: an instance type, a rule name) are never
    wrapped; where the table is wider than the terminal its `minor` columns go first, in that order, and a line
    says which; what still does not fit wraps, a word wider than its column folding onto the next line."""
    return FittedTable(title, tuple(columns), [tuple(row) for row in rows], frozenset(key), tuple(minor))


UNBOUNDED = 1 << 16


@dataclass(frozen=True)
class FittedTable:
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    key: frozenset[str]
    minor: tuple[str, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Fits: every column at least as wide as its longest word (key columns: their whole values), measured
        # without the terminal's limit, which a table's own measure is clamped to.
        unbounded = options.update_width(UNBOUNDED)
        widest = self._widest_rows(console, unbounded)
        hidden: tuple[str, ...] = ()
        for count in range(len(self.minor) + 1):
            hidden = self.minor[:count]
            if Measurement.get(console, unbounded, self._built(hidden, widest)).minimum <= options.max_width:
                break
        yield self._built(hidden, self.rows)
        if hidden:
            yield Text(f"({', '.join(hidden)} not shown at this width: widen the terminal, or --format json)",
                       style="dim")

    def _widest_rows(self, console: Console, options: ConsoleOptions) -> list[tuple[Any, ...]]:
        """Per column, the row of its widest cell minimum: a table's minimum width is the sum of those (with the
        same borders and padding), so a table of these few rows measures as the whole one does, and trying each
        set of hidden columns costs a few cells, not every cell again (~0.07 s of `gpufleet policies`)."""
        if not self.rows:
            return []
        cells = [[Measurement.get(console, options, Text(cell_text(value))).minimum for value in row]
                 for row in self.rows]
        picked = {max(range(len(self.rows)), key=lambda at: cells[at][index]) for index in range(len(self.columns))}
        return [self.rows[at] for at in sorted(picked)]

    def _built(self, hidden: tuple[str, ...], rows: list[tuple[Any, ...]]) -> Table:
        shown = [index for index, column in enumerate(self.columns) if column not in hidden]
        out = Table(title=Text(self.title), title_justify="left")
        for index in shown:
            column = self.columns[index]
            out.add_column(column, no_wrap=column in self.key, overflow="fold")
        for row in rows:
            out.add_row(*[Text(cell_text(row[index])) for index in shown])
        return out


def catalog_table(instances: list[InstanceType], region: str | None = None, mig: MigFacts | None = None) -> Table:
    def has_mig(inst: InstanceType) -> str:
        facts = mig.of(inst.gpu) if mig else None
        return "?" if facts is None else "yes" if facts.mig else "no"

    def price(inst: InstanceType) -> str:
        shown = [f"{r} {cell_text(p.on_demand) or '-'}/{cell_text(p.spot) or '-'}" if p.offered else f"{r} not offered"
                 for r, p in sorted(inst.prices.items()) if region is None or r == region]
        return "\n".join(shown)

    return table(
        "GPU instance catalog (USD/h on-demand/spot, snapshots: see `--format json` for sources)",
        ["cloud", "type", "GPUs", "GPU mem", *(["MIG"] if mig else []), "fabric", "interfaces", "NVSwitch", "prices"],
        [
            (i.cloud, i.name, f"{i.gpu.count}x {i.gpu.model}", i.gpu.memory_gb, *([has_mig(i)] if mig else []),
             i.fabric.kind, i.fabric.interfaces, "yes" if i.nvswitch else "no", price(i))
            for i in instances
        ],
        key=("cloud", "type"), minor=("NVSwitch", "interfaces", "MIG", "GPU mem"),
    )


def print_plan(console: Console, plan: PlanResult) -> None:
    console.print(resource_tree(plan))
    summary = plan.summary
    if summary["node_groups"]:
        print_capacity(console, summary)
    for standing in [] if summary["node_groups"] else summary.get("unpriced", []):  # an image stack's
        console.print(f"[yellow]USD/h unknown: {escape(standing)}[/]")
    from .review import review  # a plan's readers: the commands that print other tables never load them

    print_review(console, review(plan.to_json()["resources"]))  # the JSON form: secrets masked as printed
    print_findings(console, summary)
    print_policies(console, plan.policies)


def resource_tree(plan: PlanResult) -> Tree:
    """Every resource under its parent; those parented to the stack (or to nothing) at the top."""
    tree = Tree(f"[bold]{escape(plan.stack)}[/] ({plan.cloud}, {escape(plan.region)}): {len(plan.resources)} resources")
    recorded = {r.urn for r in plan.resources}
    children: dict[str | None, list[RecordedResource]] = {}
    for resource in sorted(plan.resources, key=lambda r: (r.type, r.name)):
        parent = resource.parent if resource.parent in recorded else None
        children.setdefault(parent, []).append(resource)

    def add(node: Tree, parent: str | None) -> None:
        for resource in children.get(parent, []):
            add(node.add(f"{resource.type} [dim]{escape(resource.name)}[/]"), resource.urn)

    add(tree, None)
    return tree


def print_capacity(console: Console, summary: dict[str, Any]) -> None:
    console.print(
        table(
            "Node groups",
            ["group", "type", "capacity", "size min/desired/max", "fabric", "interfaces"],
            [
                (g["name"], g["instance_type"], g["capacity"],
                 f"{g['size']['min']}/{g['size']['desired']}/{g['size']['max']}", g["fabric"], g["interfaces"])
                for g in summary["node_groups"]
            ],
            key=("group", "type"), minor=("interfaces",),
        )
    )
    gpus, cost = summary["gpus"], summary["hourly_usd"]
    hourly = ("USD/h unknown (a group is unpriced)" if cost["max_on_demand"] is None else
              f"USD/h desired on-demand {cost['desired_on_demand']:.2f}, desired expected "
              f"{cost['desired_expected']:.2f}, max on-demand {cost['max_on_demand']:.2f}")
    console.print(f"GPUs min/desired/max: {gpus['min']}/{gpus['desired']}/{gpus['max']}   {hourly}")
    for missing in summary.get("unpriced", []):
        console.print(f"[yellow]no published price for {escape(missing)}: give one under prices[/]")
    for priced in summary.get("stack_priced", []):
        console.print(f"[dim]{escape(priced)}[/]")


def print_review(console: Console, lines: Sequence[ReviewLine]) -> None:
    """What the resources will do, a table per concern (openings, exposure, grants, sizes, prices), as `terraform
    plan` shows the inputs that matter."""
    from .review.model import CONCERNS

    for concern in CONCERNS:
        rows = [(line.subject, line.detail) for line in lines if line.concern == concern]
        if rows:
            console.print(table(REVIEW_TITLES[concern], ["resource", "what it will do"], rows))


def print_findings(console: Console, summary: dict[str, Any]) -> None:
    """What the plan derived for the stack, its warnings and the facts a real run refuses, for cluster and image stacks
    alike."""
    for derived in summary.get("derived", []):
        console.print(f"[cyan]derived[/]: {escape(derived)}")
    for warning in summary.get("warnings", []):
        console.print(f"[yellow]warning[/]: {escape(warning)}")
    for refusal in summary.get("refusals", []):
        console.print(f"[red]refused[/] (a real `pulumi up` stops here): {escape(refusal['field'])}: "
                      f"{escape(refusal['message'])}")
    for fact in summary.get("unresolved_facts", []):
        console.print(f"[red]{fact['status']} fact[/] (a real `pulumi up` refuses it): {escape(fact['field'])}: "
                      f"{escape(fact['message'])}")


def print_policies(console: Console, policies: dict[str, Any]) -> None:
    for granted in policies.get("exceptions", []):
        console.print(
            f"[yellow]exception[/]: {escape(granted['rule'])} allowed at {granted['level']} until "
            f"{granted['expires']}: {escape(granted['reason'])} (policies/organisation.yaml)"
        )
    violations = policies["violations"]
    if not violations:
        console.print(f"Policies: {policies['evaluated']} evaluated, no violations")
        return
    # One block per violation, the message at the console's full width: a four-column table at 80 columns left
    # the message (and the command in its fix) a sliver.
    console.print(f"Policies: {policies['evaluated']} evaluated, {len(violations)} violation(s)")
    for v in violations:
        head = Text.assemble((v["level"], "red" if v["level"] == "mandatory" else "yellow"), " ", (v["policy"], "bold"),
                             f" on {(v.get('urn') or 'stack').split('::')[-1]}")
        console.print(head, overflow="fold")
        console.print(Padding(Text(v["message"]), (0, 0, 0, 4)), overflow="fold")
