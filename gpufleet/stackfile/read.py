"""Stack files (stacks/Pulumi.<stack>.yaml): reading, and `extends` resolution (maps merge, lists replace)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..yaml_model import read_yaml
from .config_keys import CLUSTER_KEY, IMAGES_KEY, POLICY_KEY
from .errors import SpecError, SpecInvalid

STACKS_DIR = Path(__file__).resolve().parents[2] / "stacks"
PROJECT = "gpufleet"  # Pulumi.yaml's name: the project every shipped stack belongs to
"""The checkout's stack files: what `pulumi up` and the policy pack read a stack from."""
EXTENDS = "extends"
# A template extends a base, a fork extends a template: a few levels are plenty, a long chain is a mistake.
MAX_EXTENDS = 8


# A stack name: one file name in stacks/, never a path (no '/', so `x/../../elsewhere` cannot leave stacks/).
STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
STACK_NAME_HELP = "letters, digits, '-', '_', '.', at most 100, starting with a letter or digit; no '/'"


def stack_path(stacks_dir: Path, stack: str) -> Path:
    """The file of stack `stack` in stacks_dir; SpecInvalid when `stack` is not a stack name (a path would read a
    file elsewhere)."""
    if not STACK_NAME.fullmatch(stack):
        raise SpecInvalid([SpecError("", f"{stack!r} is not a stack name: {STACK_NAME_HELP}")])
    return stacks_dir / f"Pulumi.{stack}.yaml"


def stack_names(stacks_dir: Path) -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stacks_dir.glob("Pulumi.*.yaml"))


def is_stack_file(path: Path, where: str = "") -> bool:
    """path.is_file(), where a name the file system cannot hold (too long) is bad input named at `where` (exit 2),
    not an internal error: is_file() lets ENAMETOOLONG through."""
    try:
        return path.is_file()
    except OSError as exc:
        shown = path.name if len(path.name) <= 60 else f"{path.name[:40]}... ({len(path.name)} characters)"
        raise SpecInvalid([SpecError(where, f"no stack file can be named {shown}: {exc.strerror}")]) from None


def read_config(path: Path) -> dict[str, Any]:
    """The `config:` map of one stack file, unresolved."""
    if not is_stack_file(path):
        raise SpecInvalid([SpecError("", f"stack file {path} does not exist")])
    doc = read_yaml(path) or {}
    plain_values(doc, "", str(path))
    config = doc.get("config", {}) if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        raise SpecInvalid([SpecError("config", "must be a map of config keys")], str(path))
    return config


def plain_values(value: Any, where: str, source: str) -> None:
    """A stack file holds maps, lists, text, numbers, booleans and nulls, as Pulumi config does: a date,
    `!!binary` or `!!set` is refused by path instead of being turned into text."""
    if isinstance(value, dict):
        for key, item in value.items():
            plain_values(item, f"{where}.{key}" if where else str(key), source)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            plain_values(item, f"{where}[{index}]", source)
    elif isinstance(value, float) and not math.isfinite(value):
        # YAML's .inf/.nan would pass every `<=` check and print as JSON's non-standard Infinity/NaN.
        raise SpecInvalid([SpecError(where, f"{value} is not a finite number")], source)
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        kind = {"date": "a date", "datetime": "a date and time", "bytes": "binary data", "set": "a set"}.get(
            type(value).__name__, f"a {type(value).__name__}"
        )
        raise SpecInvalid([SpecError(where, f"{kind} is not a stack value; quote it to keep it as text")], source)


def merge(base: Any, override: Any) -> Any:
    """Maps merge key by key, everything else (lists included) is replaced by the override."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = merge(base[key], value) if key in base else value
        return out
    return override


def resolve_extends(config: dict[str, Any], stacks_dir: Path, chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """Resolve `gpufleet:cluster.extends` (recursively) into one config map with `extends` removed."""
    for key in (CLUSTER_KEY, IMAGES_KEY):
        section = config.get(key)
        if not isinstance(section, dict) or EXTENDS not in section:
            continue
        parent = section[EXTENDS]
        if len(chain) >= MAX_EXTENDS:
            message = f"more than {MAX_EXTENDS} stacks extend one another; flatten the chain"
            raise SpecInvalid([SpecError(EXTENDS, message)])
        if not isinstance(parent, str) or not parent:
            raise SpecInvalid([SpecError(f"{EXTENDS}", "must name another stack in stacks/, e.g. aws-train-p5")])
        if parent in chain:
            cycle = " -> ".join((*chain, parent))
            raise SpecInvalid([SpecError(EXTENDS, f"extends forms a cycle: {cycle}; break it")])
        if not STACK_NAME.fullmatch(parent):
            message = f"{parent!r} is not a stack name in stacks/ ({STACK_NAME_HELP})"
            raise SpecInvalid([SpecError(EXTENDS, message)])
        path = stack_path(stacks_dir, parent)
        if not is_stack_file(path, EXTENDS):
            known = ", ".join(stack_names(stacks_dir))
            raise SpecInvalid([SpecError(EXTENDS, f"no stack {parent!r} in {stacks_dir}; known: {known}")])
        base = resolve_extends(read_config(path), stacks_dir, (*chain, parent))
        # `extends` is gpufleet's: the Pulumi CLI gives the program and the providers this file's keys only, so
        # a provider key inherited here would plan in one region and deploy in another.
        missing = [k for k in base if not k.startswith("gpufleet:") and k not in config]
        if missing:
            raise SpecInvalid([SpecError(k, f"is set in {parent!r} but not in this file: the Pulumi CLI reads provider "
                                            "settings from the stack's own file only; copy it here") for k in missing])
        child = {k: v for k, v in section.items() if k != EXTENDS}
        merged = merge(base, {**config, key: child})
        merged[key] = merge(base.get(key, {}), child)
        if POLICY_KEY in base and POLICY_KEY in config:  # a child only tightens the policy of the stack it extends
            from ..pack_config.tighten import inherited_policy

            merged[POLICY_KEY] = inherited_policy(base[POLICY_KEY], config[POLICY_KEY], POLICY_KEY)
        return merged
    return config


def load_stack(path: Path, stacks_dir: Path | None = None) -> dict[str, Any]:
    """Read a stack file and resolve `extends` against the stacks directory (default: the file's own)."""
    directory = stacks_dir or path.parent
    name = path.name[len("Pulumi."):-len(".yaml")] if path.name.startswith("Pulumi.") else path.stem
    return resolve_extends(read_config(path), directory, (name,))
