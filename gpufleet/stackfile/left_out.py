"""Every error of a stack section in one round: when fields fail the model, the section's checks still run on the
parts that validated, the failing fields left out, and their findings that may judge what stood in are dropped."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from .errors import SpecError, SpecInvalid, field_path, split_field_path


def findings_despite(raw: Any, errors: list[SpecError], validate: Callable[[Any], object]) -> list[SpecError]:
    """What `validate` (a section's validation and checks, raising SpecInvalid) finds in the rest of `raw` whose
    fields failed the model with `errors`, so one run reports every problem (a bad vpc_id does not hide a size the
    checks refuse, a bad `rdma` not the group's zone): the failing fields are left out and the rest is validated
    again; a list item missing a required field (a node group without
    instance_types) is left out whole, and the findings on the items after it keep their own index. A left-out field
    reads as its default there, so a finding that may judge it is dropped: one at, under or above it, or whose
    message names it or the left-out item's name. Nothing when a required field outside any list is missing."""
    trimmed, removed, words = copy.deepcopy(raw), [], []
    items: dict[tuple[str | int, ...], set[int]] = {}
    for error in errors:
        parts = split_field_path(error.path) or []
        parent = _at(trimmed, parts[:-1])
        if parts and isinstance(parent, dict) and parts[-1] in parent:
            del parent[parts[-1]]
            removed.append(parts)
            words.append(str(parts[-1]))
            continue
        where = max((i for i, part in enumerate(parts[:-1]) if isinstance(part, int)), default=None)
        if where is None:
            return []
        items.setdefault(tuple(parts[:where]), set()).add(int(parts[where]))
        removed.append(parts[:where + 1])
    for list_path, indexes in items.items():
        found = _at(trimmed, list(list_path))
        if not isinstance(found, list):
            return []
        for index in sorted(indexes, reverse=True):
            if index < len(found):
                name = found[index].get("name") if isinstance(found[index], dict) else None
                words.extend([name] if isinstance(name, str) else [])
                del found[index]
    try:
        validate(trimmed)
    except SpecInvalid as invalid:
        findings = [_renumbered(e, items) for e in invalid.errors]
        return [e for e in findings if not any(_at_or_near(e, parts) for parts in removed) and not _names(e, words)]
    return []


def _at(value: Any, parts: list[str | int]) -> Any:
    """The value at field path `parts` of `value`; None where there is none."""
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return None
    return value


def _renumbered(finding: SpecError, items: dict[tuple[str | int, ...], set[int]]) -> SpecError:
    """`finding` on the trimmed stack with its list index as in the file, where items before it were left out."""
    parts = split_field_path(finding.path) or []
    for list_path, left_out in items.items():
        at = len(list_path)
        if tuple(parts[:at]) == list_path and len(parts) > at and isinstance(parts[at], int):
            kept = [index for index in range(parts[at] + len(left_out) + 1) if index not in left_out]
            parts[at] = kept[parts[at]]
            return SpecError(field_path("", tuple(parts)), finding.message)
    return finding


def _at_or_near(finding: SpecError, removed: list[str | int]) -> bool:
    """Whether `finding` is at, under or above the left-out path `removed`."""
    path = split_field_path(finding.path) or []
    return path[:len(removed)] == removed or removed[:len(path)] == path


def _names(finding: SpecError, words: list[str]) -> bool:
    """Whether `finding`'s message names one of `words` (a left-out field or item): it may judge what stands in."""
    return any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", finding.message, re.IGNORECASE) for word in words)
