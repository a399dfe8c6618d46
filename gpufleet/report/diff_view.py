"""How `gpufleet diff` prints for people: rich tables on a terminal, Markdown for a pull request.

Values are shortened to VALUE_WIDTH characters here (a changed user-data blob is kilobytes); the JSON form
keeps them whole. Secrets are already masked by plan/diff.py.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from ..plan.compare import Side, StackDiff, ValueChange
from ..plan.diff_refs import DiffReport
from .markdown import fenced, md_table, md_text
from .review import review
from .review.model import ReviewLine
from .tables import table
from .words import resource_name

VALUE_WIDTH = 80
_MARK = {"added": "+", "removed": "-", "changed": "~"}
_CHANGE_COLUMNS = ["", "type", "name", "input", "before", "after"]
EXIT_MEANING = {0: "no mandatory violation in the work tree", 1: "a mandatory policy fails in the work tree",
                2: "a stack in the work tree is invalid"}


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


def _exit(diff: StackDiff) -> str:
    return " -> ".join("-" if side.exit_code is None else str(side.exit_code) for side in (diff.before, diff.after))


def _change_rows(diff: StackDiff) -> list[tuple[str, ...]]:
    """A row per changed input; an added resource has no before, so its rows are what it will do (the review's
    lines of it: openings, exposure, grants, sizes, prices), as `pulumi preview --diff` shows a create's inputs."""
    said: dict[str, list[ReviewLine]] = {}
    for line in review((diff.after.plan or {}).get("resources", [])) if diff.added else []:
        said.setdefault(line.urn, []).append(line)
    rows: list[tuple[str, ...]] = [
        ("+", r["type"], resource_name(r["urn"]), line.concern, "(none)", line.detail)
        for r in diff.added for line in said.get(r["urn"], [])
    ]
    rows += [("+", r["type"], resource_name(r["urn"]), "", "", "") for r in diff.added if r["urn"] not in said]
    rows += [("-", r["type"], resource_name(r["urn"]), "", "", "") for r in diff.removed]
    for resource in diff.changed:
        for change in resource.inputs + resource.options:
            rows.append((_MARK[change.kind], resource.type, resource_name(resource.urn), change.path, *_sides(change)))
    return rows


def _facts(diff: StackDiff) -> list[str]:
    """The stack's verdict, GPU and cost lines as plain sentences (a side that did not plan: see _failures)."""
    lines = [f"exit {_exit(diff)}",
             "GPUs " + ", ".join(f"{key} {_move(entry, diff)}" for key, entry in diff.gpus.items()),
             "USD/h " + ", ".join(f"{key.replace('_', ' ')} {_move(entry, diff, 'USD')}"
                                  for key, entry in diff.hourly_usd.items())]
    lines += [f"unpriced {label}: {', '.join(found)}" for label, found in diff.unpriced.items() if found]
    return lines


def _failures(diff: StackDiff) -> list[tuple[str, str]]:
    return [(f"{label}: {side.state}", side.error) for label, side in (("base", diff.before), ("work tree", diff.after))
            if side.error]


def _violation(v: dict[str, Any]) -> str:
    return f"{v['level']} {v['policy']} on {resource_name(v.get('urn') or '')}: {v['message']}"


def print_diff(console: Console, report: DiffReport) -> None:
    """The diff for a terminal: per stack its facts, a table of resource changes, new and fixed violations."""
    console.print(Text(f"gpufleet diff: work tree against {report.base_ref} ({report.base_commit[:12]})"))
    for diff in report.stacks:
        if diff.status == "unchanged":
            console.print(Text(f"{diff.stack}: unchanged (exit {diff.after.exit_code})"))
            continue
        console.print(Text(f"\n{diff.stack}: {diff.status}", style="bold"))
        for line in _facts(diff) + [f"{label}: {error}" for label, error in _failures(diff)]:
            console.print(Text(f"  {line}"))
        rows = _change_rows(diff)
        if rows:
            console.print(table("resources", _CHANGE_COLUMNS, rows, key=("name",), minor=("type", "before")))
        for title, found in (("new violations", diff.new_violations), ("fixed violations", diff.fixed_violations)):
            if found:
                console.print(Text(f"  {title}:"))
                for v in found:
                    console.print(Text(f"    {_violation(v)}"))
    console.print(Text(f"\nexit {report.exit_code}"))


def _stack_section(diff: StackDiff) -> str:
    parts = [f"### {md_text(diff.stack)}: {diff.status}", "\n".join(f"- {md_text(line)}" for line in _facts(diff))]
    parts += [f"{md_text(label)}:\n\n{fenced(error)}" for label, error in _failures(diff)]
    for title, found in (("New violations", diff.new_violations), ("Fixed violations", diff.fixed_violations)):
        if found:
            parts.append(f"**{title}**\n\n" + md_table(
                ["level", "policy", "resource", "message"],
                [(v["level"], v["policy"], resource_name(v.get("urn") or ""), v["message"]) for v in found]))
    rows = _change_rows(diff)
    if rows:
        parts.append(f"<details><summary>{len(rows)} resource change(s)</summary>\n\n"
                     f"{md_table(_CHANGE_COLUMNS, rows)}\n\n</details>")
    return "\n\n".join(parts)


def markdown_diff(report: DiffReport) -> str:
    """The diff for a pull request: a summary table, then per stack that is not unchanged its facts, the
    violations new and fixed, and a collapsible list of resource changes."""
    summary = md_table(
        ["stack", "status", "exit", "resources +/-/~", "GPUs max", "USD/h max on-demand", "violations new/fixed"],
        [(d.stack, d.status, _exit(d), f"{len(d.added)}/{len(d.removed)}/{len(d.changed)}", _move(d.gpus["max"], d),
          _move(d.hourly_usd["max_on_demand"], d, "USD"), f"{len(d.new_violations)}/{len(d.fixed_violations)}")
         for d in report.stacks])
    head = f"## gpufleet diff against {md_text(report.base_ref)} ({report.base_commit[:12]})"
    sections = [_stack_section(d) for d in report.stacks if d.status != "unchanged"]
    verdict = f"Exit status {report.exit_code}: {EXIT_MEANING.get(report.exit_code, 'internal error')}."
    return "\n\n".join([head, summary, *sections, verdict]) + "\n"
