"""`gpufleet plan --format sarif`: SARIF 2.1.0 for code scanning, one run for one stack or many.

Rules are the policy pack's (id = policy name); each violation is one result at the stack file, on the line of
the field it comes from where the plan can tell (see violation_source.py), else the stack's gpufleet key. An
invalid stack is one error result of its own rule. URIs are relative to the repository root (%SRCROOT%)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..plan.batch import StackOutcome
from ..plan.schedulable import SCHEDULABLE
from ..stackfile import POLICY_KEY, SpecInvalid
from .stack_lines import StackFileLines, stack_file_lines
from .violation_source import violation_field

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
INVALID_STACK = "gpufleet/invalid-stack"
LEVELS = {"mandatory": "error", "advisory": "warning"}
README = "policies/README.md"


def repository_root(start: Path) -> Path:
    """The nearest directory from `start` up holding `.git` (a checkout or a worktree), else `start`."""
    start = start.resolve()
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), start)


def tool_version() -> str | None:
    try:
        return version("gpufleet")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return None


def _rule(row: Mapping[str, Any]) -> dict[str, Any]:
    refs = [f"CIS {row['cis']}"] if row.get("cis") else []
    refs += [f"Checkov {check}" for check in row.get("checkov", [])]
    text = f"{row['description']} Levels, settings and organisation exceptions: {README}."
    if refs:
        text += " Matches " + ", ".join(refs) + "."
    return {
        "id": row["name"],
        "shortDescription": {"text": row["description"]},
        "help": {"text": text},
        "defaultConfiguration": {"level": LEVELS.get(row["level"], "warning")},
        "properties": {"tags": [row["cloud"], row["kind"]]},
    }


INVALID_RULE = {
    "id": INVALID_STACK,
    "shortDescription": {"text": "The stack file is invalid: nothing can be planned or deployed from it."},
    "help": {"text": "Fix each field the message names; `gpufleet plan --stack NAME` prints the same errors."},
    "defaultConfiguration": {"level": "error"},
}
SCHEDULABLE_RULE = {
    "id": SCHEDULABLE,
    "shortDescription": {"text": "A pod the Kubernetes stack creates has no node group that admits it."},
    "help": {"text": "The message names the pod and, per node group, the taints it does not tolerate, the labels it "
                     "selects that the group lacks, and the requests its nodes cannot hold."},
    "defaultConfiguration": {"level": "error"},
}


def file_location(path: Path, root: Path, line: int | None) -> dict[str, Any]:
    """A SARIF location: the file relative to %SRCROOT% (else its file URI), and the line where one is known."""
    resolved = path.resolve()
    if resolved.is_relative_to(root):
        artifact = {"uri": resolved.relative_to(root).as_posix(), "uriBaseId": SRCROOT}
    else:
        artifact = {"uri": resolved.as_uri()}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if line is not None:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _lines(path: Path) -> StackFileLines | None:
    try:
        return stack_file_lines(path)
    except SpecInvalid:  # unreadable since it was planned: point at the file only
        return None


def _violation_result(violation: Mapping[str, Any], outcome: StackOutcome, plan: Mapping[str, Any],
                      lines: StackFileLines | None, root: Path, index: int | None) -> dict[str, Any]:
    found = lines.locate(violation_field(violation, plan, lines)) if lines is not None else None
    location = file_location(outcome.path, root, found[1] if found else None)
    urn = violation.get("urn") or ""
    if urn:
        location["logicalLocations"] = [{"fullyQualifiedName": urn, "kind": "resource"}]
    result: dict[str, Any] = {
        "ruleId": violation["policy"],
        "level": LEVELS.get(violation["level"], "warning"),
        "message": {"text": f"{outcome.name}: {violation['message']}"},
        "locations": [location],
        "properties": {"stack": outcome.name, **({"field": found[0]} if found else {})},
    }
    if index is not None:
        result["ruleIndex"] = index
    return result


def _exception_notes(outcome: StackOutcome, lines: StackFileLines | None, root: Path,
                     index: Mapping[str, int]) -> list[dict[str, Any]]:
    """Organisation exceptions the stack relies on, as notes located at its gpufleet:policy entry."""
    notes = []
    for granted in (outcome.plan or {}).get("policies", {}).get("exceptions", []):
        line = None
        if lines is not None:
            key = next((k for k in (f"{POLICY_KEY}.{granted['rule']}", f"{POLICY_KEY}.all", POLICY_KEY)
                        if k in lines.lines), None)
            line = lines.lines[key] if key else None
        note: dict[str, Any] = {
            "level": "note",
            "message": {"text": f"{outcome.name}: exception in force: {granted['rule']} allowed at {granted['level']} "
                                f"until {granted['expires']}: {granted['reason']} (policies/organisation.yaml)"},
            "locations": [file_location(outcome.path, root, line)],
        }
        if granted["rule"] in index:
            note["associatedRule"] = {"id": granted["rule"], "index": index[granted["rule"]]}
        notes.append(note)
    return notes


def sarif_log(outcomes: Sequence[StackOutcome], catalog: Sequence[Mapping[str, Any]], root: Path) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run: the pack's rules and a result per violation of every outcome."""
    rules = [_rule(row) for row in catalog] + [INVALID_RULE, SCHEDULABLE_RULE]
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    root = root.resolve()
    results: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome.plan is None:
            results.append({
                "ruleId": INVALID_STACK,
                "ruleIndex": index[INVALID_STACK],
                "level": "error",
                "message": {"text": f"{outcome.name}: {outcome.error or 'invalid stack file'}"},
                "locations": [file_location(outcome.path, root, None)],
                "properties": {"stack": outcome.name},
            })
            continue
        lines = _lines(outcome.path)
        notes += _exception_notes(outcome, lines, root, index)
        for violation in outcome.plan["policies"]["violations"]:
            rule = index.get(violation["policy"])
            results.append(_violation_result(violation, outcome, outcome.plan, lines, root, rule))
    driver: dict[str, Any] = {"name": "gpufleet", "rules": rules}
    if (found := tool_version()) is not None:
        driver["version"] = found
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if notes:
        invocation["toolConfigurationNotifications"] = notes
    run = {"tool": {"driver": driver}, "invocations": [invocation], "results": results}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
