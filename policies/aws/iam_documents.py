"""Reading IAM policy documents: JSON strings or mappings, Statement as a dict or a list."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ..props import UNKNOWN, JsonError, get, parse_json

POLICY_TYPES = (
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/policy:Policy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
)
ROLE_TYPE = "aws:iam/role:Role"


@dataclass(frozen=True)
class Statement:
    where: str  # e.g. "policy statement 2" / "inline_policies[0] statement 1"
    body: dict[str, Any]

    @property
    def allows(self) -> bool:
        return self.body.get("Effect") == "Allow"

    def values(self, key: str) -> list[Any]:
        value = self.body.get(key)
        if value is None:
            return []
        return value if isinstance(value, list) else [value]

    def strings(self, key: str) -> list[str]:
        return [value for value in self.values(key) if isinstance(value, str)]


def statements(document: Any, where: str) -> Iterator[Statement]:
    """The statements of one document; raises JsonError when the document is malformed."""
    parsed = parse_json(document)
    if parsed is None or parsed is UNKNOWN:
        return
    if not isinstance(parsed, dict):
        raise JsonError("the document is not a JSON object")
    body = parsed.get("Statement")
    listed = body if isinstance(body, list) else [body] if isinstance(body, dict) else []
    for index, statement in enumerate(listed, start=1):
        if isinstance(statement, dict):
            yield Statement(f"{where} statement {index}", statement)


def documents(resource_type: str, props: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, document) for the permission documents a resource carries (not trust policies)."""
    if resource_type in POLICY_TYPES:
        return [("policy", get(props, "policy"))]
    if resource_type == ROLE_TYPE:
        inline = get(props, "inlinePolicies")
        if not isinstance(inline, list):
            return []
        return [(f"inline_policies[{index}]", get(entry, "policy")) for index, entry in enumerate(inline)]
    return []


def is_wildcard(action: str) -> bool:
    return "*" in action or "?" in action


def matches(action_pattern: str, action: str) -> bool:
    """IAM action patterns are case-insensitive globs."""
    return fnmatchcase(action.lower(), action_pattern.lower())
