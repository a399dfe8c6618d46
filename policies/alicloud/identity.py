"""Alibaba Cloud identity rules: RAM policies grant no wildcard actions and no OSS action on a bucket pattern.

A ram.Policy carries its document as `policyDocument` (a JSON string, {"Version": "1", "Statement": [...]}),
or in the deprecated `document` / `statements` forms; each is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.buckets import wildcard_bucket

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import UNKNOWN, JsonError, get, items, parse_json
from .resource_types import RAM_POLICY


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _statements(props: Props) -> Iterator[tuple[str, Any, list[Any], list[Any]]]:
    """(where, effect, actions, resources) of every statement; a malformed document raises JsonError."""
    for key, arg in (("policyDocument", "policy_document"), ("document", "document")):
        parsed = parse_json(get(props, key))
        if parsed is None or parsed is UNKNOWN:
            continue
        if not isinstance(parsed, dict):
            raise JsonError(f"{arg} is not a JSON object")
        body = parsed.get("Statement")
        for index, statement in enumerate(_listed(body), start=1):
            if isinstance(statement, dict):
                yield (f"{arg} statement {index}", statement.get("Effect"), _listed(statement.get("Action")),
                       _listed(statement.get("Resource")))
    listed = items(props, "statements")
    for index, statement in enumerate(listed if isinstance(listed, list) else [], start=1):
        yield (f"statements[{index - 1}]", get(statement, "effect"), _listed(get(statement, "actions")),
               _listed(get(statement, "resources")))


def check_ram_wildcards(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    try:
        found = list(_statements(props))
    except JsonError as exc:
        yield f"the policy document is malformed ({exc}): fix it"
        return
    for where, effect, actions, _ in found:
        if effect != "Allow":
            continue
        wild = sorted(a for a in actions if isinstance(a, str) and ("*" in a or "?" in a))
        if wild:
            yield f"{where} allows wildcard actions {', '.join(wild)}: list the exact actions the nodes need"


def check_ram_no_wildcard_bucket(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    # Resource, not only Action: oss:GetObject on acs:oss:*:*:*/* reads every bucket the account can reach.
    try:
        found = list(_statements(props))
    except JsonError:
        return  # alicloud-ram-no-wildcard-actions reports the malformed document
    for where, effect, actions, resources in found:
        oss = sorted(a for a in actions if isinstance(a, str) and a.strip().lower().startswith(("oss:", "*")))
        wild = sorted(r for r in resources if wildcard_bucket(r, "oss"))
        if effect == "Allow" and oss and wild:
            yield (f"{where} allows {', '.join(oss)} on {', '.join(wild)}, every bucket the pattern matches: name the "
                   "buckets (identity.oss_read_prefixes)")


RULES: list[Rule] = [
    resource_rule(
        "alicloud-ram-no-wildcard-actions",
        "RAM policies allow no wildcard actions.",
        MANDATORY,
        "alicloud",
        [RAM_POLICY],
        check_ram_wildcards,
    ),
    resource_rule(
        "alicloud-ram-no-wildcard-bucket",
        "RAM policies allow no OSS action on a bucket pattern ('*', acs:oss:*:*:*/*, acs:oss:*:*:data-*).",
        MANDATORY,
        "alicloud",
        [RAM_POLICY],
        check_ram_no_wildcard_bucket,
    ),
]
