"""Azure identity rules: no role assignment at subscription (or wider) scope, and only the allowed roles:
the built-in roles gpufleet grants, or a custom role defined in the same stack without wildcard actions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..meta import MANDATORY, Finding, Rule, Stack, config_schema, stack_rule
from ..props import UNKNOWN, get, items
from .aks import AKS_ROLES, MANAGED_CLUSTER, aks_role_allowed
from .resource_types import ROLE_ASSIGNMENT, ROLE_DEFINITION

# Built-in role definition GUIDs (Azure built-in roles reference) gpufleet grants: the disk encryption set's
# key access, the nodes' blob reads and metrics.
BUILT_IN_ROLES = {
    "e147488a-f6f5-4113-8e2d-b22465e65bf6": "Key Vault Crypto Service Encryption User",
    "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": "Storage Blob Data Reader",
    "3913510d-42f4-4e42-8a64-420c390055eb": "Monitoring Metrics Publisher",
}
# Built-in roles allowed only on one kind of resource: Key Vault Secrets User on a single secret (the Slurm nodes'
# read of the munge key, components/clouds/azure/slurm_identity.py), never on a vault, where it reads every secret.
SCOPED_ROLES: dict[str, tuple[str, re.Pattern[str]]] = {
    "4633458b-17de-408a-b874-0445c86b69e6": ("Key Vault Secrets User", re.compile(
        r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.KeyVault/vaults/[^/]+/secrets/[^/]+$", re.I)),
}
# A scope that is a subscription, a management group or the tenant root: too wide for a cluster's grants.
WIDE_SCOPE = re.compile(
    r"^(?:/|/subscriptions/[^/]+/?|/providers/Microsoft\.Management/managementGroups/[^/]+/?)$", re.IGNORECASE
)
SCHEMA = config_schema({"allowedRoleDefinitionIds": {
    "type": "array", "items": {"type": "string"},
    "description": "role definition ids a role assignment may grant at a wide scope (derived from the spec)"}})


def _custom_roles_ok(stack: Stack, assignment: Any) -> bool:
    """The assignment names a role defined in this stack whose permissions list no wildcard action (control plane
    actions or data actions)."""
    roles = stack.dependencies_of(assignment, ROLE_DEFINITION, prop="roleDefinitionId")
    for role in roles:
        permissions = items(role.props, "permissions")
        actions = [a for p in (permissions if isinstance(permissions, list) else [])
                   for key in ("actions", "dataActions") for a in items(p, key)]
        if actions and not any(isinstance(a, str) and "*" in a for a in actions):
            return True
    return False


def check_role_assignments(stack: Stack, config: Mapping[str, Any]) -> Iterator[Finding]:
    allowed = {g.lower() for g in BUILT_IN_ROLES} | {
        str(g).rsplit("/", 1)[-1].lower() for g in config.get("allowedRoleDefinitionIds") or []
    }
    for node in stack.of_type(ROLE_ASSIGNMENT):
        scope, role = get(node.props, "scope"), get(node.props, "roleDefinitionId")
        if isinstance(scope, str) and WIDE_SCOPE.match(scope):
            yield node.urn, (
                f"the role assignment's scope {scope!r} is a whole subscription or wider: assign on the resource "
                "the identity needs (the key, the storage container, the gallery)"
            )
        if role is UNKNOWN or _custom_roles_ok(stack, node):
            continue
        guid = str(role).rsplit("/", 1)[-1].lower()
        scoped = SCOPED_ROLES.get(guid)
        if scoped is not None and isinstance(scope, str) and scoped[1].match(scope):
            continue
        if guid not in allowed and not aks_role_allowed(stack, guid, scope):
            names = ", ".join(sorted(BUILT_IN_ROLES.values()))
            yield node.urn, (
                f"role definition {role!r} is not an allowed role ({names}, Key Vault Secrets User on one secret, "
                "a custom role of this stack without wildcard actions, or one listed in allowedRoleDefinitionIds; "
                "with an AKS cluster also "
                f"{', '.join(name for name, _ in AKS_ROLES.values())}, each on its own kind of resource)"
            )


RULES: list[Rule] = [
    stack_rule(
        "azure-role-assignments-scoped",
        "Role assignments are scoped below the subscription and grant only the allowed roles.",
        MANDATORY, "azure", [ROLE_ASSIGNMENT, ROLE_DEFINITION, MANAGED_CLUSTER], check_role_assignments, schema=SCHEMA,
    ),
]
