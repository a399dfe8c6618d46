"""`gpufleet fork`: a new stack file that extends a template with a few overrides."""

from __future__ import annotations

import copy
import io
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML

from .clouds.registry import CLOUDS, backend
from .spec import CLUSTER_KEY, IMAGES_KEY, SpecError, SpecInvalid, load_stack, stack_path
from .spec.stackfile import EXTENDS, STACK_NAME, plain_values, read_config
from .yaml_model import parse_yaml

if TYPE_CHECKING:
    from .plan.planner import PlanResult

# A field name, dashes allowed (tags.cost-center), then any list indexes.
SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)")
# Pulumi's stack names: letters, digits, dashes, underscores, dots; no path separator, so no traversal.
MAX_SET_VALUE = 4096


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


def _value(text: str, path: str) -> Any:
    """A --set value read as YAML 1.2 (`yes` stays text, `32` is a number); tags and dates are refused."""
    if len(text) > MAX_SET_VALUE:
        raise SpecInvalid([SpecError(path, f"value is over {MAX_SET_VALUE} characters")])
    value = parse_yaml(text, f"--set {path}")
    plain_values(value, path, f"--set {path}")
    return value


def _comments(template_path: Path) -> str:
    """The template's leading comment block: what to change when forking it stays with the fork."""
    lines = template_path.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(lines[: next((i for i, line in enumerate(lines) if not line.startswith("#")), 0)])


def fork(template: str, new: str, settings: list[str], stacks_dir: Path) -> tuple[Path, PlanResult]:
    """Write stacks/Pulumi.<new>.yaml only once the result validates (written aside, then renamed into place);
    a refused fork leaves nothing behind. Returns the path and the new stack's plan (its policy verdicts)."""
    if not STACK_NAME.fullmatch(new):
        raise SpecInvalid([SpecError("NEW", f"{new!r} is not a stack name: letters, digits, '-', '_', '.', "
                                            "at most 100, starting with a letter or digit")])
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
        value = _value(text, path)
        top = parts[0]
        # Lists replace rather than merge, so an override inside a list carries the whole list.
        if len(parts) > 1 and any(isinstance(p, int) for p in parts) and top not in section:
            section[top] = copy.deepcopy(resolved[key].get(top))
        assign(section, parts, value, path)
    provider_keys = {k: v for k, v in read_config(template_path).items() if not k.startswith("gpufleet:")}
    # The provider's region key must equal the cluster's region: a fork that moves the region moves both.
    cloud = resolved[key].get("cloud")
    if key == CLUSTER_KEY and "region" in section and cloud in CLOUDS:
        region_key = backend(cloud).region_key
        if region_key in provider_keys:
            provider_keys[region_key] = section["region"]
    body = io.StringIO()
    YAML().dump({"config": {**provider_keys, key: section}}, body)
    text = f"# Forked from {template}; inherits every field it does not set (maps merge, lists replace).\n"
    text += _comments(template_path) + body.getvalue()
    aside = Path(tempfile.mkdtemp(prefix=".fork-", dir=stacks_dir))
    try:
        staged = stack_path(aside, new)
        staged.write_text(text, encoding="utf-8")
        from .plan.planner import plan_stack

        result = plan_stack(staged, stacks_dir)
        os.replace(staged, target)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return target, result
