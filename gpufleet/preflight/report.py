"""`gpufleet preflight` for people (a rich table) and pull requests (Markdown). Every value that comes from a stack
file or an account's answer is printed as text: escaped for rich markup, escaped for Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gpufleet.report.markdown import fenced, md_table, md_text

from .runner import PreflightOutcome

MEANING = {0: "no blocking finding", 1: "blocking", 2: "not asked: fix the input or the access", 3: "internal error"}
COLUMNS = ["", "check", "field", "what the account says", "fix"]


def _rows(outcome: PreflightOutcome) -> list[tuple[str, str, str, str, str]]:
    return [("blocking" if f.blocking else "advisory", f.check, f.field, f.says, f.fix)
            for f in sorted(outcome.findings, key=lambda f: (not f.blocking, f.check, f.field))]


def findings_table(outcome: PreflightOutcome) -> Table:
    """Level, check and field stacked in the first column so the account's answer and the fix get the width; cells
    fold rather than cut, so a command in the fix is printed whole on a narrow terminal."""
    table = Table(title=Text("preflight findings"), title_justify="left", show_lines=True)
    table.add_column("finding", overflow="fold", max_width=34)
    table.add_column("what the account says", overflow="fold", ratio=1)
    table.add_column("fix", overflow="fold", ratio=1)
    for level, check, field, says, fix in _rows(outcome):
        table.add_row(Text(f"{level}\n{check}\n{field}"), Text(says), Text(fix))
    return table


def headline(outcome: PreflightOutcome) -> str:
    where = f" ({outcome.cloud}, {outcome.region})" if outcome.cloud else ""
    if outcome.error is not None:
        return f"{outcome.stack}{where}: exit {outcome.exit_code}, {MEANING.get(outcome.exit_code, 'error')}"
    advisory = len(outcome.findings) - outcome.blocking
    return f"{outcome.stack}{where}: exit {outcome.exit_code}, {outcome.blocking} blocking, {advisory} advisory"


def print_outcome(console: Console, errors: Console, outcome: PreflightOutcome) -> None:
    """The headline and the findings table on `console`; why preflight stopped on `errors`."""
    console.print(f"[bold]{escape(headline(outcome))}[/]")
    if outcome.error is not None:
        errors.print(f"error: {outcome.error}")
        return
    if outcome.findings:
        console.print(findings_table(outcome))
    else:
        console.print("The account answered every question as the stack needs.")


def stack_section(outcome: PreflightOutcome) -> str:
    head = f"### {md_text(outcome.stack)}\n\n{md_text(headline(outcome))}"
    if outcome.error is not None:
        return f"{head}\n\n{fenced(outcome.error)}\n"
    if not outcome.findings:
        return f"{head}\n\nThe account answered every question as the stack needs.\n"
    return f"{head}\n\n{md_table(COLUMNS, _rows(outcome))}\n"


def markdown_report(outcomes: Sequence[PreflightOutcome]) -> str:
    """One stack: its section. Several: a summary table, then a section per stack."""
    sections = [stack_section(outcome) for outcome in outcomes]
    if len(outcomes) == 1:
        return sections[0]
    summary = md_table(["stack", "cloud", "region", "exit", "blocking", "advisory"], [
        (o.stack, o.cloud or "", o.region or "", o.exit_code, o.blocking, len(o.findings) - o.blocking)
        for o in outcomes])
    return "\n".join([f"## gpufleet preflight: {len(outcomes)} stacks\n", summary, "", *sections])
