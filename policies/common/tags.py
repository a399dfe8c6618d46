"""required-tags: every taggable resource carries the required tag keys, on every cloud."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule
from ..props import UNKNOWN, get


def _blank(value: Any) -> bool:
    """A known tag value that says nothing (empty or spaces): a cost report cannot allocate by it."""
    return value is None or (isinstance(value, str) and not value.strip())


def _tag_keys(tags: Any) -> set[str] | None:
    """Keys of a `tags` property with a value (a mapping, or AWS ASG's list of {key, value}); None when unknown.
    A key whose value is blank counts as absent."""
    if tags is UNKNOWN:
        return None
    if isinstance(tags, dict):
        return {key for key, value in tags.items() if not _blank(value)}
    if isinstance(tags, list):
        if any(not isinstance(tag, dict) or get(tag, "key") is UNKNOWN for tag in tags):
            return None
        return {tag["key"] for tag in tags if isinstance(tag.get("key"), str) and not _blank(tag.get("value"))}
    return set()


def check_required_tags(stack: Stack, config: Config) -> Iterator[Finding]:
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
                    f"missing required tags {', '.join(missing)} (a blank value counts as missing): add them to the "
                    "cluster's tags (gpufleet:cluster.tags) so every resource carries them"
                ),
            )


RULE: Rule = stack_rule(
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
)
