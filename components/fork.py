"""`gpufleet fork`: a new stack file that extends a template with a few overrides."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from .spec import CLUSTER_KEY, IMAGES_KEY, SpecError, SpecInvalid, load_stack, stack_path
from .spec.stackfile import EXTENDS, read_config

SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def parse_path(path: str) -> list[str | int]:
    """`node_groups[0].size.max` -> ["node_groups", 0, "size", "max"]."""
    parts: list[str | int] = []
    for segment in path.split("."):
        match = SEGMENT.fullmatch(segment)
        if not match:
            raise SpecInvalid([SpecError(path, "not a field path; write it like node_groups[0].size.max")])
        parts.append(match.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return parts


def assign(target: Any, parts: list[str | int], value: Any, path: str) -> None:
    for depth, part in enumerate(parts[:-1]):
        nxt = parts[depth + 1]
        if isinstance(part, int):
            if not isinstance(target, list) or part >= len(target):
                raise SpecInvalid([SpecError(path, f"index {part} is past the end of the list")])
            target = target[part]
        else:
            target = target.setdefault(part, [] if isinstance(nxt, int) else {})
    last = parts[-1]
    if isinstance(last, int):
        if not isinstance(target, list) or last >= len(target):
            raise SpecInvalid([SpecError(path, f"index {last} is past the end of the list")])
    target[last] = value


def fork(template: str, new: str, settings: list[str], stacks_dir: Path) -> Path:
    """Write stacks/Pulumi.<new>.yaml; validates the result before writing, returns the path."""
    template_path = stack_path(stacks_dir, template)
    target = stack_path(stacks_dir, new)
    if target.exists():
        raise SpecInvalid([SpecError("", f"{target} exists already; pick another name")])
    resolved = load_stack(template_path, stacks_dir)
    key = CLUSTER_KEY if CLUSTER_KEY in resolved else IMAGES_KEY
    section: dict[str, Any] = {EXTENDS: template}
    for setting in settings:
        path, sep, text = setting.partition("=")
        if not sep:
            raise SpecInvalid([SpecError(setting, "write --set as path=value, e.g. node_groups[0].size.max=32")])
        parts = parse_path(path)
        value = yaml.safe_load(text)
        top = parts[0]
        # Lists replace rather than merge, so an override inside a list carries the whole list.
        if len(parts) > 1 and any(isinstance(p, int) for p in parts) and top not in section:
            section[top] = copy.deepcopy(resolved[key].get(top))
        assign(section, parts, value, path)
    provider_keys = {k: v for k, v in read_config(template_path).items() if not k.startswith("gpufleet:")}
    document = {"config": {**provider_keys, key: section}}
    text = f"# Forked from {template}; inherits every field it does not set (maps merge, lists replace).\n"
    text += yaml.safe_dump(document, sort_keys=False)
    target.write_text(text)
    try:
        from .plan.planner import plan_stack

        plan_stack(target, stacks_dir)
    except SpecInvalid:
        target.unlink()
        raise
    return target
