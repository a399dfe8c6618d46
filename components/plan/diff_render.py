"""How `gpufleet diff` prints for people: rich tables on a terminal, Markdown for a pull request.

Values are shortened to VALUE_WIDTH characters here (a changed user-data blob is kilobytes); the JSON form
keeps them whole. Secrets are already masked by diff.py.
"""

from __future__ import annotations

import html
import json
from typing import Any

from rich.console import Console
from rich.text import Text

from ..render import table
from .diff import Side, StackDiff, ValueChange
from .diff_refs import DiffReport

VALUE_WIDTH = 80
_MARK = {"added": "+", "removed": "-", "changed": "~"}


def _short(value: Any, absent: bool) -> str:
    if absent:
        return "(none)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= VALUE_WIDTH else f"{text[:VALUE_WIDTH - 1]}… ({len(text)} chars)"


def _sides(change: ValueChange) -> tuple[str, str]:
    return _short(change.before, change.kind == "added"), _short(change.after, change.kind == "removed")


def _number(value: float | int | None, side: Side, unit: str) -> str:
    if value is None:
        return "unpriced" if unit and side.state == "planned" else "unknown"
    return f"{value:.2f}" if unit else str(value)


def _move(entry: dict[str, Any], diff: StackDiff, unit: str = "") -> str:
    """`before -> after (delta)`; a null side reads unpriced (planned, a group without a price) or unknown
    (the side did not plan), never 0."""
    before, after, delta = entry["before"], entry["after"], entry["delta"]
    text = f"{_number(before, diff.before, unit)} -> {_number(after, diff.after, unit)}"
    if delta:
        text += f" ({'+' if delta > 0 else ''}{f'{delta:.2f}' if unit else delta})"
    return text


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _exit(diff: StackDiff) -> str:
    return f"{diff.before.exit_code if diff.before.exit_code is not None else '-'} -> " \
           f"{diff.after.exit_code if diff.after.exit_code is not None else '-'}"


def _change_rows(diff: StackDiff) -> list[tuple[str, str, str, str, str, str]]:
    rows = [("+", r["type"], _name(r["urn"]), "", "", "") for r in diff.added]
    rows += [("-", r["type"], _name(r["urn"]), "", "", "") for r in diff.removed]
    for resource in diff.changed:
        for change in resource.inputs + resource.options:
            rows.append((_MARK[change.kind], resource.type, _name(resource.urn), change.path, *_sides(change)))
    return rows


def _facts(diff: StackDiff) -> list[str]:
    """The stack's verdict, GPU and cost lines, and any side that did not plan, as plain sentences."""
    lines = [f"exit {_exit(diff)}"]
    for label, side in (("base", diff.before), ("work tree", diff.after)):
        if side.error:
            lines.append(f"{label}: {side.state}: {side.error}")
    lines.append("GPUs " + ", ".join(f"{key} {_move(entry, diff)}" for key, entry in diff.gpus.items()))
    lines.append("USD/h " + ", ".join(f"{key.replace('_', ' ')} {_move(entry, diff, 'USD')}"
                                      for key, entry in diff.hourly_usd.items()))
    for label, unpriced in diff.unpriced.items():
        if unpriced:
            lines.append(f"unpriced {label}: {', '.join(unpriced)}")
    return lines


def _violation(v: dict[str, Any]) -> str:
    """A stack-level rule (the budget) has no URN."""
    where = f" on {_name(v['urn'])}" if v.get("urn") else ""
    return f"{v['level']} {v['policy']}{where}: {v['message']}"


def print_diff(console: Console, report: DiffReport) -> None:
    """The diff for a terminal: per stack its facts, a table of resource changes, new and fixed violations."""
    console.print(Text(f"gpufleet diff: work tree against {report.base_ref} ({report.base_commit[:12]})"))
    for diff in report.stacks:
        if diff.status == "unchanged":
            console.print(Text(f"{diff.stack}: unchanged (exit {diff.after.exit_code})"))
            continue
        console.print(Text(f"\n{diff.stack}: {diff.status}", style="bold"))
        for line in _facts(diff):
            console.print(Text(f"  {line}"))
        rows = _change_rows(diff)
        if rows:
            console.print(table("resources", ["", "type", "name", "input", "before", "after"], rows))
        for title, found in (("new violations", diff.new_violations), ("fixed violations", diff.fixed_violations)):
            if found:
                console.print(Text(f"  {title}:"))
                for v in found:
                    console.print(Text(f"    {_violation(v)}"))
    console.print(Text(f"\nexit {report.exit_code}"))


def _cell(text: str) -> str:
    """Literal text in a Markdown table cell: HTML-escaped, pipes and newlines neutralised."""
    return html.escape(text, quote=False).replace("|", "&#124;").replace("\n", " ")


def _code(text: str) -> str:
    return f"<code>{_cell(text)}</code>" if text else ""


def markdown_diff(report: DiffReport) -> str:
    """The diff for a pull request: a summary table, then per changed stack its facts and a collapsible
    list of resource changes."""
    lines = [f"## gpufleet diff against <code>{_cell(report.base_ref)}</code> ({report.base_commit[:12]})", "",
             "| stack | status | exit | resources +/-/~ | GPUs max | USD/h max on-demand | violations new/fixed |",
             "|---|---|---|---|---|---|---|"]
    for d in report.stacks:
        gpus, usd = _move(d.gpus["max"], d), _move(d.hourly_usd["max_on_demand"], d, "USD")
        lines.append(f"| {_cell(d.stack)} | {d.status} | {_exit(d)} | {len(d.added)}/{len(d.removed)}/"
                     f"{len(d.changed)} | {gpus} | {usd} | {len(d.new_violations)}/{len(d.fixed_violations)} |")
    for d in report.stacks:
        if d.status == "unchanged":
            continue
        lines += ["", f"### {_cell(d.stack)}: {d.status}", ""]
        lines += [f"- {_cell(line)}" for line in _facts(d)]
        lines += [f"- new violation: {_cell(_violation(v))}" for v in d.new_violations]
        lines += [f"- fixed violation: {_cell(_violation(v))}" for v in d.fixed_violations]
        rows = _change_rows(d)
        if rows:
            lines += ["", f"<details><summary>{len(rows)} resource change(s)</summary>", "",
                      "| | type | name | input | before | after |", "|---|---|---|---|---|---|"]
            lines += [f"| {mark} | {_cell(typ)} | {_cell(name)} | {_code(path)} | {_code(old)} | {_code(new)} |"
                      for mark, typ, name, path, old, new in rows]
            lines += ["", "</details>"]
    lines += ["", f"Exit status {report.exit_code}: "
              + {0: "no mandatory violation in the work tree.", 1: "a mandatory policy fails in the work tree.",
                 2: "a stack in the work tree is invalid."}.get(report.exit_code, "internal error.")]
    return "\n".join(lines) + "\n"
