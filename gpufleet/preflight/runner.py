"""`gpufleet preflight`: plan a stack offline, then ask its cloud's account what an offline plan cannot know.

The plan comes first and is the same as `gpufleet plan`'s: an invalid stack stops with exit 2 and a mandatory
policy failure with exit 1, and nothing is asked of the account. Then the stack's cloud part,
`gpufleet.preflight.<cloud>.preflight(prepared)`, is imported (only now: `plan` never loads a cloud SDK) and asked.

Exit status: 0 no blocking finding; 1 a blocking finding (or the plan's mandatory policy failure); 2 an invalid
stack, no usable credentials or an API refusal the user fixes (PreflightUnavailable), a cloud without a preflight
part; 3 an internal error (raised, the CLI turns it into exit 3).

`--format json` prints one document per stack (a list of them with --all):

    {"stack": "aws-train-p5", "cloud": "aws", "region": "us-east-1", "exit": 1,
     "findings": [{"check": "aws-quota", "field": "node_groups[0].size.max", "blocking": true,
                   "says": "what the account answered", "fix": "what to do"}],
     "blocking": 1, "advisory": 0, "error": null}

`field` is a path under the stack's gpufleet:cluster (or gpufleet:images) key, as validation errors write it;
`error` says why preflight stopped before asking (invalid stack, refused plan, unavailable account), else null.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet.stackfile import SpecInvalid

from .findings import Finding, PreflightUnavailable

EXIT_CLEAN, EXIT_BLOCKING, EXIT_UNAVAILABLE = 0, 1, 2
CLOUD_PARTS = {cloud: f"gpufleet.preflight.{cloud}" for cloud in ("aws", "azure", "alicloud")}


@dataclass(frozen=True)
class PreflightOutcome:
    """One stack's preflight: its findings, or why it stopped before asking the account."""

    stack: str
    path: Path
    exit_code: int
    cloud: str | None = None
    region: str | None = None
    findings: tuple[Finding, ...] = field(default=())
    error: str | None = None

    @property
    def blocking(self) -> int:
        return sum(f.blocking for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack, "cloud": self.cloud, "region": self.region, "exit": self.exit_code,
            "findings": [{"check": f.check, "field": f.field, "blocking": f.blocking, "says": f.says, "fix": f.fix}
                         for f in self.findings],
            "blocking": self.blocking, "advisory": len(self.findings) - self.blocking, "error": self.error,
        }


def ask_cloud(cloud: str, prepared: object) -> list[Finding]:
    """The cloud part's findings for a prepared stack; a cloud whose part is not installed is exit 2."""
    name = CLOUD_PARTS.get(cloud)
    if name is None:
        raise PreflightUnavailable(f"preflight knows no cloud {cloud!r}; it asks {', '.join(CLOUD_PARTS)}")
    try:
        part = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name not in (name, *CLOUD_PARTS.values()):
            raise  # a module the part itself imports is missing: an installation error, not this case
        raise PreflightUnavailable(
            f"this gpufleet has no {cloud} preflight ({name} is not installed): `gpufleet plan` checks the stack "
            "offline meanwhile") from None
    findings: list[Finding] = part.preflight(prepared)
    return findings


def refused_plan(name: str, violations: list[dict[str, Any]]) -> str:
    """What the plan says when a mandatory policy fails, one violation a line."""
    mandatory = [v for v in violations if v.get("level") == "mandatory"]
    lines = [f"the offline plan of {name} fails {len(mandatory)} mandatory policy check(s), so nothing was asked of "
             f"the account (`gpufleet plan --stack {name}` shows the plan):"]
    lines += [f"  {v['policy']} [{(v.get('urn') or 'stack').rsplit('::', 1)[-1]}]: {v['message']}" for v in mandatory]
    return "\n".join(lines)


def preflight_stack(path: Path, stacks_dir: Path | None = None) -> PreflightOutcome:
    """Plan the stack file at `path` offline, then ask its account (exit codes: see the module docstring)."""
    from gpufleet.plan.planner import plan_and_prepared, stack_name

    name = stack_name(path)
    try:
        plan, prepared = plan_and_prepared(path, stacks_dir)
    except SpecInvalid as invalid:
        return PreflightOutcome(name, path, EXIT_UNAVAILABLE, error=str(invalid))
    if plan.mandatory_failed:
        return PreflightOutcome(name, path, EXIT_BLOCKING, plan.cloud, plan.region,
                                error=refused_plan(name, plan.policies["violations"]))
    try:
        findings = ask_cloud(plan.cloud, prepared)
    except PreflightUnavailable as exc:
        return PreflightOutcome(name, path, EXIT_UNAVAILABLE, plan.cloud, plan.region, error=str(exc))
    blocking = any(f.blocking for f in findings)
    return PreflightOutcome(name, path, EXIT_BLOCKING if blocking else EXIT_CLEAN, plan.cloud, plan.region,
                            tuple(findings))
