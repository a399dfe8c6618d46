"""Which way each rule setting tightens, and the one function that lays one layer of settings on another.

Layers, loosest first: the pack's defaults, the organisation file (policies/organisation.yaml `settings`),
the settings derived from the stack's spec (budget, node groups at max, image profile, RDMA types), the
stack's own `gpufleet:policy`, and under the Pulumi CLI a `--policy-pack-config` file. A later layer may
only tighten what the earlier ones give: a lower budget, more required tags, fewer allowed types. A
setting the stack's spec derives cannot be written at all (the spec is where it changes). The direction
of every setting is data (TIGHTER below); test_policy_settings.py checks every setting the pack
takes is listed, so a new one cannot slip through as "the stack's value wins".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from policies.registry import RULES_BY_NAME

from ..stackfile.errors import SpecError, SpecInvalid
from .settings import RANK, PolicyConfigError, check_property, requested_level


@dataclass(frozen=True)
class Direction:
    """How two values of one setting combine into the tighter one, and what a looser value is told."""

    combine: Callable[[Any, Any], Any]
    """(earlier value or None, later value) -> the value that applies."""
    refused: str
    """Why a later value that the combination would change is refused: {given} and {base} are filled in."""
    additive: bool = False
    """The later value adds to the earlier one (required tags): it is never refused, only combined."""


def _sorted_set(values: Any) -> list[Any]:
    return sorted(set(values or []))


def _lower(base: Any, given: Any) -> Any:
    return given if base is None else min(base, given)


def _higher(base: Any, given: Any) -> Any:
    return given if base is None else max(base, given)


def _allow_list(base: Any, given: Any) -> list[Any]:
    """An allow-list where empty allows anything: the later list may only drop entries."""
    if not base:
        return _sorted_set(given)
    return _sorted_set(base) if not given else sorted(set(base) & set(given))


def _grants(base: Any, given: Any) -> list[Any]:
    """Grants beyond the rule's own (empty grants nothing more): the later list may only drop entries."""
    return sorted(set(base or []) & set(given or []))


def _union_per_key(base: Any, given: Any) -> dict[str, list[Any]]:
    base, given = base or {}, given or {}
    return {key: _sorted_set([*base.get(key, []), *given.get(key, [])]) for key in sorted({*base, *given})}


def _derived(base: Any, given: Any) -> Any:
    return given if base is None else base


LOWER = Direction(_lower, "{given} is above {base}; a stack may only lower it")
HIGHER = Direction(_higher, "{given} is below {base}; a stack may only raise it")
MORE = Direction(lambda base, given: _sorted_set([*(base or []), *given]), "", additive=True)
MORE_PER_KEY = Direction(_union_per_key, "", additive=True)
FEWER_OF = Direction(_allow_list, "{given} allows more than {base}; a stack may only narrow the list")
FEWER_GRANTS = Direction(_grants, "{given} grants more than {base}; only the organisation file grants more")
REQUIRED = Direction(lambda base, given: bool(base) or bool(given), "cannot be switched off ({base} applies)")
DERIVED = Direction(_derived, "is derived from the stack's spec ({base}); change the spec, not the policy setting")

# (rule, setting) -> the direction that tightens it.
TIGHTER: dict[tuple[str, str], Direction] = {
    ("hourly-budget", "maxHourlyUsd"): LOWER,
    ("hourly-budget", "budgetRequired"): REQUIRED,
    ("hourly-budget", "pricesAtLeastCatalog"): REQUIRED,
    ("hourly-budget", "region"): DERIVED,
    ("hourly-budget", "nodeGroups"): DERIVED,
    ("image-lock-valid", "profile"): DERIVED,
    ("image-lock-valid", "requiredRegions"): MORE_PER_KEY,
    ("required-tags", "keys"): MORE,
    ("allowed-instance-types", "types"): FEWER_OF,
    ("azure-role-assignments-scoped", "allowedRoleDefinitionIds"): FEWER_GRANTS,
    ("aws-log-retention", "minimumDays"): HIGHER,
    ("azure-no-internet-admin-inbound", "allowedServiceTags"): DERIVED,
    ("customer-key-account", "stackAccounts"): DERIVED,
    ("customer-key-account", "allowedKeyAccounts"): FEWER_GRANTS,
    ("azure-admin-inbound-per-group", "allowedServiceTags"): DERIVED,
    # More types on the mandatory EFA rule checks more; the advisory one checks the types not listed, so its list
    # is the stack's (derived) one.
    ("aws-efa-interface-count", "rdmaInUseInstanceTypes"): MORE,
    ("aws-efa-interface-count-advisory", "rdmaInUseInstanceTypes"): DERIVED,
    ("aws-slurm-partition-one-fabric", "rdmaRequiredGroups"): MORE,
    ("alicloud-slurm-partition-one-fabric", "rdmaRequiredGroups"): MORE,
}


def _plain(value: Any) -> Any:
    """Whole floats as ints: under the Pulumi CLI every config number arrives as a double (16 reads 16.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, dict) else value


def _key(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True)


def _same(left: Any, right: Any) -> bool:
    """Equal as settings: lists compare as sets (their order means nothing to a rule)."""
    if isinstance(left, list) and isinstance(right, list):
        return set(map(_key, left)) == set(map(_key, right))
    return _key(left) == _key(right)


def _default(rule: str, key: str) -> Any:
    """The pack's own default of a rule's setting (its config schema), or None."""
    schema = RULES_BY_NAME[rule].policy.config_schema
    return (schema.properties.get(key) or {}).get("default") if schema is not None else None


def tighten(
    rule: str, base: Mapping[str, Any], given: Mapping[str, Any], where: str, *, refuse: bool = True
) -> dict[str, Any]:
    """`base`'s settings with `given`'s laid on: each combined the tighter way (TIGHTER).

    With `refuse`, a given value that the combination would change (one that loosens, or writes a setting the
    spec derives) is SpecInvalid (exit 2) naming `where`.<setting>; without, the tighter value applies.
    """
    merged = dict(base)
    problems = []
    for key, value in given.items():
        if key == "enforcementLevel":
            continue
        direction = TIGHTER.get((rule, key))
        if direction is None:
            problems.append(SpecError(f"{where}.{key}", f"{rule} takes no such setting from a stack"))
            continue
        if value is None:
            continue
        try:
            check_property(RULES_BY_NAME[rule].policy, key, value, where)
        except PolicyConfigError as exc:
            problems.append(SpecError(f"{where}.{key}", str(exc).split(": ", 1)[-1]))
            continue
        # A setting no earlier layer gives holds the pack's default, which a stack may only tighten too (a minimum
        # retention of 1 day is looser than the default 30 however few layers came before).
        if refuse and direction is DERIVED and key not in base:
            # Nothing derived here (an Azure stack without Managed Lustre has no service tag to allow): still the
            # spec's to say, so a stack's value is refused, not taken as the derivation.
            problems.append(SpecError(f"{where}.{key}", "is derived from the stack's spec, which gives none here; a "
                                                        "stack cannot set it"))
            continue
        earlier = base.get(key, None if direction is DERIVED or direction.additive else _default(rule, key))
        combined = direction.combine(earlier, value)
        if refuse and not direction.additive and not _same(combined, value):
            shown = earlier
            problems.append(SpecError(f"{where}.{key}", direction.refused.format(given=value, base=shown)))
            continue
        merged[key] = combined
    if problems:
        raise SpecInvalid(problems)
    return merged


def check_organisation_settings(settings: Mapping[str, Mapping[str, Any]]) -> None:
    """SpecInvalid for an organisation setting a rule does not take, of the wrong type, or one each stack's spec
    derives (a budget's region, node groups, an image profile)."""
    problems = [SpecError(f"settings.{rule}.{key}", "is derived from each stack's spec; the organisation cannot set it")
                for rule, given in settings.items() for key in given if TIGHTER.get((rule, key)) is DERIVED]
    for rule, given in settings.items():
        try:  # the first layer: nothing to loosen, only names and types to check
            tighten(rule, {}, given, f"settings.{rule}", refuse=False)
        except SpecInvalid as invalid:
            problems += invalid.errors
    if problems:
        raise SpecInvalid(problems)


def inherited_policy(base: Any, child: Any, where: str) -> Any:
    """A child stack's `gpufleet:policy` laid on the one of the stack it extends: settings only tighten and levels
    only rise (resolve_extends would otherwise let the child's list replace the base's, `keys: []` dropping the
    base's required tags). Malformed maps are left to user_policy/resolve_config to name."""
    if not isinstance(base, dict) or not isinstance(child, dict):
        return child
    merged = dict(base)
    problems = []
    for name, entry in child.items():
        before, after = requested_level(base.get(name)), requested_level(entry)
        if before and after and RANK[after] < RANK[before]:
            problems.append(SpecError(f"{where}.{name}", f"{after} is below {before}, the level of the stack it "
                                                         "extends; a child stack may only raise it"))
            continue
        if name not in RULES_BY_NAME or not (entry is None or isinstance(entry, (str, dict))):
            merged[name] = entry
            continue
        held = base.get(name)
        held_settings = {k: v for k, v in held.items() if k != "enforcementLevel"} if isinstance(held, dict) else {}
        try:
            settings = tighten(name, held_settings, entry if isinstance(entry, dict) else {}, f"{where}.{name}")
        except SpecInvalid as invalid:
            problems += invalid.errors
            continue
        level = after or before
        merged[name] = {**({"enforcementLevel": level} if level else {}), **settings}
    if problems:
        raise SpecInvalid(problems)
    return merged
