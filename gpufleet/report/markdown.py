"""`gpufleet plan --format markdown`: a pull-request-sized summary per stack, for a PR comment or a job summary.

Every value from a stack file or a policy message is escaped: a `|` cannot split a table cell, `<` opens no
HTML, a backtick starts no code span."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..plan.batch import StackOutcome
from .diagram import cluster_diagram
from .review import review
from .words import resource_name

# CommonMark lets any ASCII punctuation be escaped with a backslash; these are the ones that start markup
# inside a line (emphasis, code, links, HTML, tables, strikethrough, entities).
_MARKUP = re.compile(r"([\\`*_{}\[\]<>|~&#!])")
EXIT_MEANING = {0: "clean", 1: "a mandatory policy failed", 2: "invalid stack file"}


def md_text(value: Any) -> str:
    """`value` as literal Markdown text on one line."""
    return _MARKUP.sub(r"\\\1", " ".join(str(value).splitlines()))


def md_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(md_text(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(md_text("" if cell is None else cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def fenced(text: str) -> str:
    """`text` verbatim in a code block whose fence no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def usd(value: float) -> str:
    return f"{value:,.2f}"


def cost_line(summary: Mapping[str, Any]) -> str:
    """USD/h of the summary; a group with no price makes its share "unpriced", never 0."""
    groups, unpriced = summary.get("node_groups", []), summary.get("unpriced", [])
    if not groups:
        return "no node groups"
    if unpriced:
        return "unpriced (" + md_text(", ".join(unpriced)) + ")"
    cost = summary["hourly_usd"]
    return (f"desired on-demand {usd(cost['desired_on_demand'])}, desired expected "
            f"{usd(cost['desired_expected'])}, max on-demand {usd(cost['max_on_demand'])}")


def _clusters(plan: Mapping[str, Any]) -> list[str]:
    return [r["name"] for r in plan["resources"]
            if r["type"].startswith("gpufleet:") and r["type"].endswith(":Cluster")]


def stack_section(outcome: StackOutcome, rules: Mapping[str, Mapping[str, Any]]) -> str:
    """One stack: where it runs, groups, GPUs, cost, violations with their rule's help, exceptions, resources."""
    head = f"### {md_text(outcome.name)}\n\nexit {outcome.exit_code}: {EXIT_MEANING.get(outcome.exit_code, 'error')}"
    plan = outcome.plan
    if plan is None:
        return f"{head}\n\n{fenced(outcome.error or 'no plan')}\n"
    summary, policies = plan["summary"], plan["policies"]
    parts = [head, f"**{md_text(plan['cloud'])}**, region {md_text(plan['region'])}; "
             f"cluster: {md_text(', '.join(_clusters(plan)) or 'none (image stack)')}"]
    if summary["node_groups"]:
        parts.append(md_table(
            ["node group", "instance type", "capacity", "size min/desired/max", "fabric", "interfaces"],
            [(g["name"], g["instance_type"], g["capacity"],
              f"{g['size']['min']}/{g['size']['desired']}/{g['size']['max']}", g["fabric"], g["interfaces"])
             for g in summary["node_groups"]],
        ))
    gpus = summary["gpus"]
    parts.append(f"GPUs min/desired/max: **{gpus['min']}/{gpus['desired']}/{gpus['max']}**  \n"
                 f"USD/h: {cost_line(summary)}")
    parts += [f"_{md_text(note)}_" for note in summary.get("stack_priced", [])]
    parts += [f"**derived**: {md_text(derived)}" for derived in summary.get("derived", [])]
    parts += [f"**warning**: {md_text(warning)}" for warning in summary.get("warnings", [])]
    parts += [f"**refused** (a real `pulumi up` stops here): {md_text(refusal['field'])}: {md_text(refusal['message'])}"
              for refusal in summary.get("refusals", [])]
    parts += [f"**{fact['status']} fact** (a real `pulumi up` refuses it): {md_text(fact['field'])}: "
              f"{md_text(fact['message'])}" for fact in summary.get("unresolved_facts", [])]
    if lines := review(plan["resources"]):
        parts.append("**What it will do**\n\n" + md_table(
            ["concern", "resource", "what it will do"], [(line.concern, line.subject, line.detail) for line in lines]))
    if summary["node_groups"]:
        parts.append(f"```mermaid\n{cluster_diagram(plan)}\n```")
    parts.append(_policies(policies, rules))
    parts.append(_resources(plan["resources"]))
    return "\n\n".join(parts) + "\n"


def _policies(policies: Mapping[str, Any], rules: Mapping[str, Mapping[str, Any]]) -> str:
    violations = policies["violations"]
    lines = [f"**Policies**: {policies['evaluated']} evaluated, {len(violations)} violation(s)"]
    for granted in policies.get("exceptions", []):
        lines.append(f"- exception in force: {md_text(granted['rule'])} allowed at {md_text(granted['level'])} until "
                     f"{md_text(granted['expires'])}: {md_text(granted['reason'])} (policies/organisation.yaml)")
    if violations:
        lines.append("\n" + md_table(
            ["level", "policy", "resource", "message (with the fix)", "what the rule requires"],
            [(v["level"], v["policy"], resource_name(v.get("urn") or ""), v["message"],
              rules.get(v["policy"], {}).get("description", "")) for v in violations],
        ))
    return "\n".join(lines)


def _resources(resources: Sequence[Mapping[str, Any]]) -> str:
    table = md_table(["type", "name"], sorted((r["type"], r["name"]) for r in resources))
    return f"<details><summary>{len(resources)} resources</summary>\n\n{table}\n\n</details>"


def _summary_row(outcome: StackOutcome) -> tuple[Any, ...]:
    plan = outcome.plan
    if plan is None:
        # The error reads "invalid <file>:" then one indented line per problem: show the first problem.
        problems = [line.strip() for line in (outcome.error or "").splitlines()[1:]] or [outcome.error or ""]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return (outcome.name, "", "", outcome.exit_code, "", "", f"invalid: {problems[0]}{more}")
    summary, violations = plan["summary"], plan["policies"]["violations"]
    mandatory = sum(v["level"] == "mandatory" for v in violations)
    groups, unpriced = summary["node_groups"], summary.get("unpriced", [])
    cost = "no node groups" if not groups else "unpriced" if unpriced else usd(summary["hourly_usd"]["max_on_demand"])
    gpus = summary["gpus"]
    return (outcome.name, plan["cloud"], plan["region"], outcome.exit_code,
            f"{gpus['min']}/{gpus['desired']}/{gpus['max']}", cost,
            f"{mandatory} mandatory, {len(violations) - mandatory} advisory")


def markdown_report(outcomes: Sequence[StackOutcome], rules: Mapping[str, Mapping[str, Any]]) -> str:
    """One stack: its section. Several: a summary table, then a section per stack."""
    sections = [stack_section(outcome, rules) for outcome in outcomes]
    if len(outcomes) == 1:
        return sections[0]
    table = md_table(
        ["stack", "cloud", "region", "exit", "GPUs min/desired/max", "max USD/h on-demand", "violations"],
        [_summary_row(outcome) for outcome in outcomes],
    )
    return "\n".join([f"## gpufleet plan: {len(outcomes)} stacks\n", table, "", *sections])
