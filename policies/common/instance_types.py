"""allowed-instance-types: node groups use only the allowed instance types (VM sizes), on every cloud.

Which resources ask for which types is each cloud's reader (policies/<cloud>/), merged by the registry.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..cloud import Readers
from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule


def check_allowed_types(stack: Stack, config: Config, readers: Readers) -> Iterator[Finding]:
    allowed = [name for name in config.get("types") or [] if isinstance(name, str)]
    if not allowed:
        raise NotApplicable("every instance type is allowed (types is empty)")
    for node in stack.nodes:
        refused = sorted({name for name in readers.instance_types(node) if name not in allowed})
        if refused:
            yield (
                node.urn,
                (
                    f"instance types {', '.join(refused)} are not allowed here: use one of "
                    f"{', '.join(sorted(allowed))} or ask for them to be added to allowed-instance-types"
                ),
            )


def rule(readers: Readers) -> Rule:
    return stack_rule(
        "allowed-instance-types",
        "Node groups use only the allowed instance types (VM sizes).",
        MANDATORY,
        "any",
        readers.compute_types,
        lambda stack, config: check_allowed_types(stack, config, readers),
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
    )
