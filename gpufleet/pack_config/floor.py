"""The organisation's floor under a stack's policy levels (policies/organisation.yaml).

A stack cannot switch off the gate that checks it: a level below a rule's floor needs an exception in the
organisation file naming the rule, the stack, a reason and an expiry date; exceptions in use are reported.
An exception binds to a stack file of the organisation file's own project (<project>/stacks/Pulumi.<stack>.yaml
beside <project>/policies/organisation.yaml), not to a name: a file of that name anywhere else gets none.
"""

from __future__ import annotations

from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from policies.registry import RULES_BY_NAME

from .. import organisation_file
from ..stackfile.config_keys import POLICY_KEY
from ..stackfile.errors import SpecError, SpecInvalid
from ..yaml_model import StrictModel, load_yaml_model
from .settings import RANK, requested_level
from .tighten import check_organisation_settings

Level = Literal["advisory", "mandatory", "remediate", "disabled"]


class PolicyException(StrictModel):
    """A rule allowed below its floor in the named stacks, for a reason, until a date."""

    rule: str
    stacks: list[str] = Field(..., min_length=1)
    level: Level = Field(..., description="the lowest level the stacks may set")
    reason: str = Field(..., min_length=10)
    expires: date


class Organisation(StrictModel):
    floors: dict[str, Literal["advisory", "mandatory"]] = Field(default_factory=dict)
    settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="rule -> settings every stack starts from and may only tighten"
    )
    exceptions: list[PolicyException] = Field(default_factory=list)


@cache
def organisation() -> Organisation:
    """The organisation file, read once per process."""
    path = organisation_file.ORGANISATION_FILE
    found = load_yaml_model(path, Organisation)
    unknown = sorted({*found.floors, *found.settings, *(e.rule for e in found.exceptions)} - set(RULES_BY_NAME))
    if unknown:
        raise SpecInvalid([SpecError("", f"no such policy in the pack: {', '.join(unknown)}")], str(path))
    try:
        check_organisation_settings(found.settings)
    except SpecInvalid as invalid:
        raise SpecInvalid(invalid.errors, str(path)) from None
    return found


def project_stacks() -> Path:
    """The stacks directory of the organisation file's project."""
    return organisation_file.ORGANISATION_FILE.parent.parent / "stacks"


def bound_stack(path: Path) -> str | None:
    """The stack name organisation exceptions may grant for the file at `path`: its name when it is the project's
    own stacks/Pulumi.<name>.yaml, else None (a copy elsewhere, another stacks directory, another file name)."""
    name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    own = project_stacks() / f"Pulumi.{name}.yaml"
    try:
        return name if path.name == own.name and path.resolve() == own.resolve() else None
    except OSError:  # a path the file system refuses to resolve is not the project's file
        return None


def floor(rule: str, org: Organisation) -> str:
    return org.floors.get(rule) or RULES_BY_NAME[rule].policy.enforcement_level.value


def raised_floors(org: Organisation) -> dict[str, str]:
    """Rules whose organisation floor is above the pack's level: they run at the floor unless the stack asks for
    a level itself (at or above it, or below it through an exception), however it writes the rule."""
    return {rule: level for rule, level in org.floors.items()
            if RANK[level] > RANK[RULES_BY_NAME[rule].policy.enforcement_level.value]}


def exceptions_in_use(
    user: dict[str, Any], stack: str | None, today: date, org: Organisation
) -> list[dict[str, str]]:
    """The exceptions the stack's levels rely on; SpecInvalid (exit 2) for a level below a floor without one.
    `stack`: the name exceptions may grant (bound_stack), None for a file outside the project's stacks/."""
    used: dict[str, PolicyException] = {}
    problems = []
    for name, entry in user.items():
        level = requested_level(entry)
        rules = list(RULES_BY_NAME) if name == "all" else [name] if name in RULES_BY_NAME else []
        for rule in rules if level else []:
            lowest = floor(rule, org)
            if RANK[level] >= RANK[lowest]:
                continue
            grants = [
                e for e in org.exceptions
                if e.rule == rule and stack is not None and stack in e.stacks and RANK[e.level] <= RANK[level]
            ]
            valid = [e for e in grants if e.expires >= today]
            if valid:
                used[rule] = valid[0]
            elif grants:
                problems.append(SpecError(f"{POLICY_KEY}.{name}", f"the exception for {rule} expired on "
                                                                  f"{grants[0].expires}; renew it or keep {lowest}"))
            elif stack is None and any(e.rule == rule for e in org.exceptions):
                problems.append(SpecError(
                    f"{POLICY_KEY}.{name}",
                    f"{level} is below the organisation floor of {rule} ({lowest}); its exceptions apply only to the "
                    "project's own stack files (stacks/Pulumi.<stack>.yaml), and this file is not one",
                ))
            else:
                problems.append(SpecError(
                    f"{POLICY_KEY}.{name}",
                    f"{level} is below the organisation floor of {rule} ({lowest}); a stack cannot lower it: add an "
                    "exception with a reason and an expiry date to policies/organisation.yaml",
                ))
    if problems:
        raise SpecInvalid(problems)
    return [{"rule": e.rule, "level": e.level, "reason": e.reason, "expires": e.expires.isoformat()}
            for _, e in sorted(used.items())]
