"""The difference between two offline plans of one stack (plan JSON documents, as `gpufleet plan --format
json` prints them): resources added, removed and changed by URN, the input paths that changed, GPU and
USD/h deltas, and policy violations new and fixed.

Secrets never reach the output: a value the engine marks secret, and any value under a key whose name
says it holds one (see `secret_key`), prints as SECRET; a change to it still shows, without the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime.rpc import is_rpc_secret

from .secret_values import SECRET, is_secret_text, secret_key

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ABSENT = object()

# Resource options that change what `pulumi up` does to a resource beside its inputs.
_OPTIONS = ("protect", "ignore_changes")
_HOURLY_KEYS = ("desired_on_demand", "desired_expected", "max_on_demand")
_GPU_KEYS = ("min", "desired", "max")


@dataclass(frozen=True)
class ValueChange:
    """One changed path: kind is added, removed or changed; before/after are None where absent."""

    path: str
    kind: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "before": self.before, "after": self.after}


def _path(parent: str, key: str | int) -> str:
    """Pulumi's property path syntax: a.b[0]["key:with.odd chars"]."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _PLAIN_KEY.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f'{parent}["{key}"]'


def _masked(value: Any) -> Any:
    """The value with every engine-marked secret inside it replaced by SECRET."""
    if is_rpc_secret(value) or is_secret_text(value):
        return SECRET
    if isinstance(value, dict):
        return {k: SECRET if secret_key(k) else _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def value_changes(before: Any, after: Any, path: str = "") -> list[ValueChange]:
    """Every leaf path whose value differs, maps by key and lists by position, secrets masked."""
    if before == after:
        return []
    if before is _ABSENT or after is _ABSENT:
        kind = "added" if before is _ABSENT else "removed"
        return [ValueChange(path, kind, None if before is _ABSENT else _masked(before),
                            None if after is _ABSENT else _masked(after))]
    if is_secret_text(before) and is_secret_text(after) and SECRET in (before, after):
        return []  # a plan that masks (a ref older than digests) cannot say whether the secret changed
    if is_rpc_secret(before) or is_rpc_secret(after) or is_secret_text(before) or is_secret_text(after):
        return [ValueChange(path, "changed", SECRET, SECRET)]
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[ValueChange] = []
        for key in sorted(before.keys() | after.keys()):
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if secret_key(key) and old != new:
                changes.append(ValueChange(_path(path, key), _kind(old, new), *_secret_sides(old, new)))
            else:
                changes += value_changes(old, new, _path(path, key))
        return changes
    if isinstance(before, list) and isinstance(after, list):
        changes = []
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else _ABSENT
            new = after[index] if index < len(after) else _ABSENT
            changes += value_changes(old, new, _path(path, index))
        return changes
    return [ValueChange(path, "changed", _masked(before), _masked(after))]


def _kind(old: Any, new: Any) -> str:
    return "added" if old is _ABSENT else "removed" if new is _ABSENT else "changed"


def _secret_sides(old: Any, new: Any) -> tuple[Any, Any]:
    return (None if old is _ABSENT else SECRET), (None if new is _ABSENT else SECRET)


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    inputs: list[ValueChange]
    options: list[ValueChange]

    def to_json(self) -> dict[str, Any]:
        return {"urn": self.urn, "type": self.type, "inputs": [c.to_json() for c in self.inputs],
                "options": [c.to_json() for c in self.options]}


@dataclass(frozen=True)
class Side:
    """One side of a stack's diff: planned (plan JSON and its exit code), absent (no such stack file
    there), invalid (exit 2, the stack file's errors) or error (the planner crashed, exit 3)."""

    state: str
    exit_code: int | None = None
    plan: dict[str, Any] | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "exit_code": self.exit_code, "error": self.error}


def _numbers(side: Side, section: str, keys: tuple[str, ...]) -> dict[str, float | int | None]:
    """A summary section of one side: zero when the stack is absent (nothing is deployed), None when it
    is not known (the side did not plan, or a group has no price: a partial sum is no total)."""
    if side.state == "absent":
        return dict.fromkeys(keys, 0)
    if side.plan is None:
        return dict.fromkeys(keys, None)
    summary = side.plan.get("summary", {})
    if section == "hourly_usd" and summary.get("unpriced"):
        return dict.fromkeys(keys, None)
    values = summary.get(section, {})
    return {key: values.get(key) for key in keys}


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for key in before:
        old, new = before[key], after[key]
        delta = None if old is None or new is None else round(new - old, 4)
        out[key] = {"before": old, "after": new, "delta": delta}
    return out


def _violation_key(v: dict[str, Any]) -> tuple[str, str, str]:
    return v["policy"], v["urn"], v["message"]


@dataclass
class StackDiff:
    stack: str
    before: Side
    after: Side
    added: list[dict[str, str]] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    changed: list[ResourceChange] = field(default_factory=list)
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    hourly_usd: dict[str, dict[str, Any]] = field(default_factory=dict)
    unpriced: dict[str, list[str]] = field(default_factory=dict)
    new_violations: list[dict[str, Any]] = field(default_factory=list)
    fixed_violations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        """added / removed (the stack file exists on one side only), changed, unchanged, or not planned
        when either side is invalid or crashed."""
        states = (self.before.state, self.after.state)
        if states == ("absent", "planned"):
            return "added"
        if states == ("planned", "absent"):
            return "removed"
        if "planned" not in states or "invalid" in states or "error" in states:
            return "not planned"
        touched = self.added or self.removed or self.changed or self.new_violations or self.fixed_violations
        return "changed" if touched or self.before.exit_code != self.after.exit_code else "unchanged"

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "status": self.status,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "resources": {"added": self.added, "removed": self.removed,
                          "changed": [c.to_json() for c in self.changed]},
            "gpus": self.gpus,
            "hourly_usd": self.hourly_usd,
            "unpriced": self.unpriced,
            "violations": {"new": self.new_violations, "fixed": self.fixed_violations},
        }


def diff_stack(stack: str, before: Side, after: Side) -> StackDiff:
    """Compare two sides of one stack. When a side did not plan (invalid, error) nothing is known of its
    resources or violations, so none are compared: the diff says which side failed and why."""
    result = StackDiff(stack, before, after)
    result.gpus = _delta(_numbers(before, "gpus", _GPU_KEYS), _numbers(after, "gpus", _GPU_KEYS))
    result.hourly_usd = _delta(_numbers(before, "hourly_usd", _HOURLY_KEYS),
                               _numbers(after, "hourly_usd", _HOURLY_KEYS))
    result.unpriced = {name: list((side.plan or {}).get("summary", {}).get("unpriced", []))
                       for name, side in (("before", before), ("after", after))}
    if {before.state, after.state} & {"invalid", "error"}:
        return result
    old = {r["urn"]: r for r in (before.plan or {}).get("resources", [])}
    new = {r["urn"]: r for r in (after.plan or {}).get("resources", [])}
    result.added = [{"urn": urn, "type": new[urn]["type"]} for urn in sorted(new.keys() - old.keys())]
    result.removed = [{"urn": urn, "type": old[urn]["type"]} for urn in sorted(old.keys() - new.keys())]
    for urn in sorted(old.keys() & new.keys()):
        inputs = value_changes(old[urn].get("inputs", {}), new[urn].get("inputs", {}))
        options = [c for key in _OPTIONS for c in value_changes(old[urn].get(key), new[urn].get(key), key)]
        if inputs or options:
            result.changed.append(ResourceChange(urn, new[urn]["type"], inputs, options))
    old_v = {_violation_key(v): v for v in (before.plan or {}).get("policies", {}).get("violations", [])}
    new_v = {_violation_key(v): v for v in (after.plan or {}).get("policies", {}).get("violations", [])}
    result.new_violations = [new_v[k] for k in sorted(new_v.keys() - old_v.keys())]
    result.fixed_violations = [old_v[k] for k in sorted(old_v.keys() - new_v.keys())]
    return result
