"""Stack rules that hold on every cloud: tags, allowed instance types, hourly budget, image lock."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from typing import Any

from .capacity import GROUP_READERS, TYPE_READERS, group_sizes, instance_types
from .images import lock_module
from .meta import MANDATORY, NotApplicable, Rule, Stack, config_schema, stack_rule
from .props import UNKNOWN, get

Finding = tuple[str | None, str]


def _tag_keys(tags: Any) -> set[str] | None:
    """Keys of a `tags` property: a mapping, or AWS ASG's list of {key, value}; None when unknown."""
    if tags is UNKNOWN:
        return None
    if isinstance(tags, dict):
        return set(tags)
    if isinstance(tags, list):
        if any(not isinstance(tag, dict) or get(tag, "key") is UNKNOWN for tag in tags):
            return None
        return {tag["key"] for tag in tags if isinstance(tag.get("key"), str)}
    return set()


def check_required_tags(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    required = [key for key in config.get("keys") or [] if isinstance(key, str)]
    if not required:
        raise NotApplicable("no required tag keys configured (keys)")
    for node in stack.nodes:
        if "tags" not in node.props:
            continue
        present = _tag_keys(node.props["tags"])
        if present is None:
            continue
        missing = [key for key in required if key not in present]
        if missing:
            yield (
                node.urn,
                (
                    f"missing required tags {', '.join(missing)}: add them to the cluster's tags "
                    "(gpufleet:cluster.tags) so every resource carries them"
                ),
            )


def check_allowed_types(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    allowed = [name for name in config.get("types") or [] if isinstance(name, str)]
    if not allowed:
        raise NotApplicable("every instance type is allowed (types is empty)")
    for node in stack.nodes:
        refused = sorted({name for name in instance_types(node) if name not in allowed})
        if refused:
            yield (
                node.urn,
                (
                    f"instance types {', '.join(refused)} are not allowed here: use one of "
                    f"{', '.join(sorted(allowed))} or ask for them to be added to allowed-instance-types"
                ),
            )


def check_hourly_budget(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    budget, region = config.get("maxHourlyUsd"), config.get("region")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool):
        raise NotApplicable("no budget configured (maxHourlyUsd)")
    if not isinstance(region, str) or not region:
        raise NotApplicable("no region configured (region), so prices cannot be looked up")
    from components.catalog import load_catalog  # the catalog reads data files: only when the rule runs

    catalog = load_catalog()
    total, parts, unpriced = 0.0, [], []
    for group in group_sizes(stack):
        entry = catalog.get(group.cloud, group.instance_type) if group.instance_type else None
        price = entry.price(region) if entry else None
        if group.count is None or price is None or price.on_demand is None:
            unpriced.append(group.urn)
            continue
        cost = group.count * price.on_demand
        total += cost
        parts.append(f"{group.count} x {group.instance_type} at {price.on_demand:.2f} = {cost:.2f}")
    if total > budget:
        note = f"; {len(unpriced)} group(s) without a known price not counted" if unpriced else ""
        yield (
            None,
            (
                f"hourly cost at max size is {total:.2f} USD ({'; '.join(parts)}{note}), over the budget of "
                f"{budget:.2f} USD: lower node_groups[].size.max or raise budget.max_hourly_usd"
            ),
        )


def check_image_lock(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    profile = config.get("profile")
    if not isinstance(profile, str) or not profile:
        raise NotApplicable("no image profile configured (profile)")
    # cloud -> regions, the shape check_lock takes; None checks the lock's own required regions.
    regions = {cloud: set(names) for cloud, names in (config.get("requiredRegions") or {}).items()} or None
    lock = lock_module()
    try:
        problems = lock.check_lock(lock.load_lock(), date.today(), required_regions=regions, profile=profile)
    except (lock.LockError, OSError) as exc:
        yield None, f"images/lock.yaml could not be read: {exc}: fix the lock file (gpufleet images check)"
        return
    for problem in problems:
        yield (
            None,
            (
                f"image profile {problem.profile!r}, {problem.field}: {problem.message} "
                "(run `gpufleet images check` and fix images/lock.yaml)"
            ),
        )


def _compute_types() -> list[str]:
    return sorted(set(TYPE_READERS) | set(GROUP_READERS))


RULES: list[Rule] = [
    stack_rule(
        "required-tags",
        "Every taggable resource carries the required tag keys.",
        MANDATORY,
        "any",
        ["*"],
        check_required_tags,
        schema=config_schema(
            {
                "keys": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "tag keys every taggable resource must carry",
                }
            }
        ),
    ),
    stack_rule(
        "allowed-instance-types",
        "Node groups use only the allowed instance types (VM sizes).",
        MANDATORY,
        "any",
        _compute_types(),
        check_allowed_types,
        schema=config_schema(
            {
                "types": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "allowed instance types; empty allows any",
                }
            }
        ),
    ),
    stack_rule(
        "hourly-budget",
        "On-demand cost of every scaling group at max size stays within the hourly budget.",
        MANDATORY,
        "any",
        sorted(GROUP_READERS),
        check_hourly_budget,
        schema=config_schema(
            {
                "maxHourlyUsd": {
                    "type": "number",
                    "minimum": 0,
                    "description": "budget in USD per hour at max size",
                },
                "region": {"type": "string", "description": "region whose catalog prices apply"},
            }
        ),
    ),
    stack_rule(
        "image-lock-valid",
        "The stack's image profile passes the lock checks (driver, fabric manager, CUDA, image ids).",
        MANDATORY,
        "any",
        [],
        check_image_lock,
        schema=config_schema(
            {
                "profile": {"type": "string", "description": "image profile in images/lock.yaml"},
                "requiredRegions": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    "description": "cloud -> regions the profile must carry an image id for",
                },
            }
        ),
    ),
]
