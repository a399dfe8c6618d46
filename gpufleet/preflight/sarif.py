"""`gpufleet preflight --format sarif`: SARIF 2.1.0 for code scanning, built as `plan`'s (gpufleet/report/sarif.py).

Rules are the preflight checks that reported (id = the check, e.g. aws-quota); each finding is one result at the
stack file, on the line of its field (or of the nearest field the file writes: stack_lines.StackFileLines.locate),
an error when blocking, a warning when advisory. A stack preflight stopped on (invalid, a refused plan, an account
that could not be asked) is one error result of the rule gpufleet/preflight-stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpufleet.report.sarif import SCHEMA_URI, file_location, tool_version
from gpufleet.report.stack_lines import StackFileLines, stack_file_lines
from gpufleet.stackfile import SpecInvalid

from .findings import Finding
from .runner import PreflightOutcome

STOPPED = "gpufleet/preflight-stopped"
STOPPED_RULE = {
    "id": STOPPED,
    "shortDescription": {"text": "Preflight stopped before asking the account."},
    "help": {"text": "An invalid stack, a plan that fails a mandatory policy, missing or refused credentials: the "
                     "message says which and what to do; `gpufleet preflight --stack NAME` prints the same."},
    "defaultConfiguration": {"level": "error"},
}


def _rule(check: str) -> dict[str, Any]:
    return {
        "id": check,
        "shortDescription": {"text": f"preflight check {check}: the account's answer does not fit the stack."},
        "help": {"text": "Each result names the stack field, what the account answered and the fix. Blocking "
                         "results: `pulumi up` would fail or build something else."},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": [check.split("-", 1)[0], "preflight"]},
    }


def _lines(path: Path) -> StackFileLines | None:
    try:
        return stack_file_lines(path)
    except SpecInvalid:  # unreadable since it was planned: point at the file only
        return None


def _result(finding: Finding, outcome: PreflightOutcome, lines: StackFileLines | None, root: Path,
            index: int) -> dict[str, Any]:
    found = lines.locate(finding.field) if lines is not None else None
    return {
        "ruleId": finding.check,
        "ruleIndex": index,
        "level": "error" if finding.blocking else "warning",
        "message": {"text": f"{outcome.stack}: {finding.field}: {finding.says}. Fix: {finding.fix}"},
        "locations": [file_location(outcome.path, root, found[1] if found else None)],
        "properties": {"stack": outcome.stack, "field": finding.field, "blocking": finding.blocking},
    }


def sarif_log(outcomes: Sequence[PreflightOutcome], root: Path) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run: a rule per check that reported, a result per finding of every stack."""
    checks = sorted({f.check for outcome in outcomes for f in outcome.findings})
    rules = [_rule(check) for check in checks] + [STOPPED_RULE]
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    root = root.resolve()
    results: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome.error is not None:
            results.append({
                "ruleId": STOPPED, "ruleIndex": index[STOPPED], "level": "error",
                "message": {"text": f"{outcome.stack}: {outcome.error}"},
                "locations": [file_location(outcome.path, root, None)],
                "properties": {"stack": outcome.stack, "exit": outcome.exit_code},
            })
            continue
        lines = _lines(outcome.path) if outcome.findings else None
        results += [_result(f, outcome, lines, root, index[f.check]) for f in outcome.findings]
    driver: dict[str, Any] = {"name": "gpufleet preflight", "rules": rules}
    if (found := tool_version()) is not None:
        driver["version"] = found
    run = {"tool": {"driver": driver}, "invocations": [{"executionSuccessful": True}], "results": results}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
