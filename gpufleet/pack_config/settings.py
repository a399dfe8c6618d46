"""Each rule's level and settings from a pack config of the `--policy-pack-config` shape, read the way the Pulumi CLI
reads it: {"all": LEVEL, "<policy>": LEVEL | {"enforcementLevel": LEVEL, ...}}."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import Policy

LEVELS = ("advisory", "mandatory", "remediate", "disabled")
RANK = {"disabled": 0, "advisory": 1, "remediate": 2, "mandatory": 2}
"""How strict each level is: a stack may raise a rule's level, never lower it below its floor."""
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "array": (list, tuple),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
}


class PolicyConfigError(ValueError):
    """The policy config is malformed: the message names the field and the reason."""


def requested_level(entry: Any) -> str | None:
    """The level a `gpufleet:policy` entry asks for (a level, or a map's enforcementLevel); None when it names none."""
    level = entry.get("enforcementLevel") if isinstance(entry, dict) else entry
    return level if isinstance(level, str) and level in RANK else None


@dataclass(frozen=True)
class PolicySetting:
    level: str
    properties: dict[str, Any]


def _level(value: Any, where: str) -> str:
    if isinstance(value, str) and value in LEVELS:
        return value
    raise PolicyConfigError(f"{where}: {value!r} is not an enforcement level (one of {', '.join(LEVELS)})")


def check_property(policy: Policy, key: str, value: Any, where: str) -> None:
    """PolicyConfigError unless `value` has the type the policy's schema gives `key`."""
    schema = policy.config_schema.properties if policy.config_schema else {}
    if key not in schema:
        known = ", ".join(sorted(schema)) or "none"
        raise PolicyConfigError(f"{where}.{key}: {policy.name} takes no such setting (settings: {known})")
    expected = schema[key].get("type")
    types = _JSON_TYPES.get(expected, ())
    if types and (not isinstance(value, types) or (isinstance(value, bool) and expected != "boolean")):
        raise PolicyConfigError(f"{where}.{key}: expected {expected}, got {type(value).__name__}")
    if expected == "array" and "items" in schema[key]:
        item_types = _JSON_TYPES.get(schema[key]["items"].get("type"), ())
        if item_types and any(not isinstance(item, item_types) for item in value):
            raise PolicyConfigError(f"{where}.{key}: every item must be a {schema[key]['items']['type']}")


def resolve_config(policies: Sequence[Policy], config: Mapping[str, Any] | None) -> dict[str, PolicySetting]:
    """Each policy's level and properties, with the precedence of the Pulumi CLI.

    Level: the policy's own entry, else "all", else the policy's default. Properties: the schema's
    defaults overlaid with the entry's settings.
    """
    config = config or {}
    if not isinstance(config, Mapping):
        raise PolicyConfigError(
            f"policy config: expected a mapping of policy name to settings, got {type(config).__name__}"
        )
    by_name = {policy.name: policy for policy in policies}
    unknown = sorted(set(config) - set(by_name) - {"all"})
    if unknown:
        raise PolicyConfigError(f"policy config.{unknown[0]}: no such policy in the pack")
    all_level = None
    if "all" in config:
        raw = config["all"]
        raw = raw.get("enforcementLevel") if isinstance(raw, Mapping) else raw
        all_level = _level(raw, "policy config.all")
    settings = {}
    for policy in policies:
        where = f"policy config.{policy.name}"
        entry = config.get(policy.name)
        level, properties = None, {}
        if isinstance(entry, str):
            level = _level(entry, where)
        elif isinstance(entry, Mapping):
            if "enforcementLevel" in entry:
                level = _level(entry["enforcementLevel"], f"{where}.enforcementLevel")
            for key, value in entry.items():
                if key != "enforcementLevel":
                    check_property(policy, key, value, where)
                    properties[key] = copy.deepcopy(value)
        elif entry is not None:
            raise PolicyConfigError(f"{where}: expected a level or a mapping, got {type(entry).__name__}")
        default = policy.enforcement_level.value if policy.enforcement_level is not None else "advisory"
        defaults = {
            key: copy.deepcopy(spec["default"])
            for key, spec in (policy.config_schema.properties if policy.config_schema else {}).items()
            if "default" in spec
        }
        settings[policy.name] = PolicySetting(level or all_level or default, {**defaults, **properties})
    return settings
