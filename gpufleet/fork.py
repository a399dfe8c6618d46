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

from .clouds.lookup import backend
from .clouds.registry import CLOUDS
from .stackfile import CLUSTER_KEY, IMAGES_KEY, SpecError, SpecInvalid, load_stack, stack_path
from .stackfile.errors import split_field_path
from .stackfile.models import NAME_PATTERN
from .stackfile.read import EXTENDS, STACK_NAME, plain_values
from .yaml_model import parse_yaml

if TYPE_CHECKING:
    from .plan.planner import PlanResult

# Pulumi's stack names: letters, digits, dashes, underscores, dots; no path separator, so no traversal.
MAX_SET_VALUE = 4096
APPEND = "[+]"


def parse_path(path: str) -> list[str | int]:
    """`node_groups[0].size.max` -> ["node_groups", 0, "size", "max"]."""
    parts = split_field_path(path)
    if parts is None:
        raise SpecInvalid([SpecError(path, "not a field path; write it like node_groups[0].size.max")])
    return parts


def _get(node: Any, parts: list[str | int], missing: Any) -> Any:
    """The value at `parts` under `node`, else `missing`."""
    for part in parts:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return missing
    return node


def _step(target: Any, part: str | int, path: str) -> None:
    """Refuse stepping into something that is not a map (a field name) or a list (an index)."""
    wanted = list if isinstance(part, int) else dict
    if not isinstance(target, wanted):
        held = "a map" if isinstance(target, dict) else "a list" if isinstance(target, list) else f"{target!r}"
        what = f"index [{part}]" if isinstance(part, int) else f"field {part!r}"
        raise SpecInvalid([SpecError(path, f"{what} cannot be set inside {held}")])
    if isinstance(part, int) and part >= len(target):
        raise SpecInvalid([SpecError(path, f"index {part} is past the end of the list")])


def assign(target: Any, parts: list[str | int], value: Any, path: str) -> None:
    for depth, part in enumerate(parts[:-1]):
        nxt = parts[depth + 1]
        _step(target, part, path)
        if isinstance(part, int):
            target = target[part]
        else:
            target = target.setdefault(part, [] if isinstance(nxt, int) else {})
    _step(target, parts[-1], path)
    target[parts[-1]] = value


def _fits_template(resolved: Any, parts: list[str | int], path: str) -> None:
    """Refuse a path that steps inside a value the template holds as text, a number or a list where a map is
    needed (or the reverse), as far as the template has the path: the fork would only fail later, less clearly."""
    node = resolved
    for part in parts[:-1]:
        _step(node, part, path)
        if isinstance(part, str) and part not in node:
            return
        node = node[part]
    _step(node, parts[-1], path)


def _holds_text(resolved: Any, parts: list[str | int]) -> bool:
    """The template holds text at the path, or the path adds a key to a map of text (tags): a --set value there
    is written as text (`tags.cost-center=4411` is the tag "4411", which YAML would read as a number)."""
    node = resolved
    for part in parts[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    last = parts[-1]
    if isinstance(node, dict):
        return isinstance(node[last], str) if last in node else bool(node) and all(
            isinstance(v, str) for v in node.values())
    return isinstance(node, list) and isinstance(last, int) and last < len(node) and isinstance(node[last], str)


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
        appended = path.endswith(APPEND)  # node_groups[+]={...}: one more item (lists replace: the fork lists all)
        parts = parse_path(path.removesuffix(APPEND))
        _fits_template(resolved.get(key), parts, path)
        value = _value(text, path)
        if appended:
            listed = _get(section, parts, None)
            listed = _get(resolved.get(key), parts, []) if listed is None else listed
            if not isinstance(listed, list):
                raise SpecInvalid([SpecError(path, "[+] adds an item to a list; the template holds no list here")])
            value = [*copy.deepcopy(listed), value]
        elif isinstance(value, (int, float, bool)) and _holds_text(resolved.get(key), parts):
            value = text.strip()
        top = parts[0]
        # Lists replace rather than merge, so an override inside a list carries the whole list.
        if len(parts) > 1 and any(isinstance(p, int) for p in parts) and top not in section:
            section[top] = copy.deepcopy(resolved[key].get(top))
        assign(section, parts, value, path)
    if key == CLUSTER_KEY and "name" not in section:
        # Two forks of one template would share its cluster name, and every account-scoped name built from it.
        if not re.fullmatch(NAME_PATTERN, new):
            raise SpecInvalid([SpecError("NEW", f"{new!r} cannot also name the cluster (lower-case letters, digits "
                                                "and dashes, starting with a letter): add --set name=<cluster name>")])
        section["name"] = new
    # Provider keys as the template resolves them (a template that extends another may set none itself), and the
    # region key equal to the region the fork sets: the provider deploys where its key says.
    provider_keys = {k: v for k, v in resolved.items() if not k.startswith("gpufleet:")}
    cloud = resolved[key].get("cloud")
    regions = section.get("regions") if key == IMAGES_KEY else [section["region"]] if "region" in section else None
    if isinstance(regions, list) and regions and cloud in CLOUDS:
        provider_keys[backend(cloud).region_key] = regions[0]
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
