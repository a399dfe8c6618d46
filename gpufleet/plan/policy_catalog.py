"""What the pack offers: its rules as rows (name, level, kind, cloud, resource types, description, CIS /
Checkov match) and the JSON Schema of its config.

Both read the rules' catalog entries, which are plain data: neither loads the policy SDK nor Pulumi (see
policies/meta.py), so `gpufleet policies` and `gpufleet schema --stack-file` start without them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..pack_config.settings import LEVELS

if TYPE_CHECKING:
    from policies.meta import Rule



def policy_catalog() -> list[dict[str, Any]]:
    """One row per rule, for `gpufleet policies`, the plan reports and policies/README.md."""
    from policies.registry import RULES

    return [
        {
            "name": rule.name,
            "level": rule.level,
            "kind": rule.kind,
            "cloud": rule.cloud,
            "resource_types": list(rule.resource_types),
            "description": rule.description,
            "cis": rule.cis,
            "checkov": list(rule.checkov),
        }
        for rule in RULES
    ]


def config_json_schema(rules: Sequence[Rule]) -> dict[str, Any]:
    """JSON Schema of a pack config that resolve_config accepts: per rule (or "all") a level, or a map of
    `enforcementLevel` and the rule's own settings. Nothing is required: unset settings keep their defaults."""
    level = {"enum": list(LEVELS), "description": "mandatory stops `pulumi up`, advisory only prints, disabled skips "
                                                  "the rule (lowering a floor needs an organisation exception)"}

    def entry(rule: Rule | None) -> dict[str, Any]:
        settings = rule.config_schema.properties if rule is not None and rule.config_schema else {}
        described = ({"description": rule.description} if rule is not None and rule.description else
                     {"description": "every rule's level, where a rule's own entry gives none"})
        return {**described, "anyOf": [level, {
            "type": "object", "additionalProperties": False,
            "properties": {"enforcementLevel": level, **copy.deepcopy(settings)},
        }]}

    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {"all": entry(None), **{rule.name: entry(rule) for rule in rules}},
    }
