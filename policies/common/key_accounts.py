"""customer-key-account: every encryption key a resource names is of the stack's own account, or of one the
organisation grants (policies/organisation.yaml `settings: {customer-key-account: {allowedKeyAccounts: [...]}}`).

The stack's accounts are derived from its spec (the ARNs and resource ids it names as its own: an instance profile,
an alarm topic, an Azure identity; gpufleet/pack_config/derive.py), the same set the spec judges its keys by
(gpufleet/stackfile/keys.py), so the pack holds without the spec. A key is any KMS key or alias ARN (AWS, Alibaba
Cloud) or Key Vault resource id (Azure) among a resource's inputs that no other resource of the stack provides:
keys the stack creates are its own by construction (and unknown until created).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.keys import (
    ALLOWED_KEY_ACCOUNTS,
    KEY_ACCOUNT_RULE,
    KEY_REFERENCE,
    STACK_ACCOUNTS,
    account_problem,
)

from ..meta import MANDATORY, Config, Finding, NotApplicable, Rule, Stack, config_schema, stack_rule


def _references(value: Any) -> Iterator[str]:
    """Every string in `value` (nested maps and lists) that names a key or a vault."""
    if isinstance(value, str):
        if KEY_REFERENCE.match(value.strip()):
            yield value.strip()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def _accounts(config: Config, key: str) -> frozenset[str]:
    return frozenset(str(account).lower() for account in config.get(key) or [])


def check_key_accounts(stack: Stack, config: Config) -> Iterator[Finding]:
    own = _accounts(config, STACK_ACCOUNTS)
    if not own:
        raise NotApplicable("the stack names no account of its own (no ARN or resource id of it in its spec)")
    allowed = _accounts(config, ALLOWED_KEY_ACCOUNTS)
    for node in stack.nodes:
        for prop, value in sorted(node.props.items()):
            if node.property_dependencies.get(prop):
                continue  # it comes from another resource of the stack (a created key): the stack's own
            for reference in sorted(set(_references(value))):
                problem = account_problem(reference, own, allowed)
                if problem:
                    yield node.urn, f"{prop}: {problem}"


RULE: Rule = stack_rule(
    KEY_ACCOUNT_RULE,
    "Every encryption key (KMS key or alias ARN, Key Vault) a resource names is of the stack's own account, or of "
    "an account the organisation grants.",
    MANDATORY,
    "any",
    [],
    check_key_accounts,
    schema=config_schema({
        STACK_ACCOUNTS: {
            "type": "array", "items": {"type": "string"}, "default": [],
            "description": "the stack's own accounts, derived from its spec (not set by a stack or the organisation)",
        },
        ALLOWED_KEY_ACCOUNTS: {
            "type": "array", "items": {"type": "string"}, "default": [],
            "description": "accounts (AWS account ids, Alibaba Cloud account ids, Azure subscription ids) whose keys "
            "every stack may use besides its own; granted by the organisation file, a stack may only drop entries",
        },
    }),
)
