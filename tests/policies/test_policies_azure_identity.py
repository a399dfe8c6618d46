"""Azure identity rule: role assignments below the subscription, allowed roles only."""

from __future__ import annotations

from azure_rule_args import messages, res

ASSIGNMENT = "azure-native:authorization:RoleAssignment"
DEFINITION = "azure-native:authorization:RoleDefinition"
SUB = "/subscriptions/00000000-0000-4000-8000-000000000000"
KEY_SCOPE = f"{SUB}/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv/keys/disks"
CRYPTO_USER = f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/e147488a-f6f5-4113-8e2d-b22465e65bf6"
CONTRIBUTOR = f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
RULE = "azure-role-assignments-scoped"
SECRET_SCOPE = f"{SUB}/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv/secrets/slurm-munge-key"
SECRETS_USER = f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/4633458b-17de-408a-b874-0445c86b69e6"


def grant(scope: str, role: str, **deps: tuple[str, ...]):
    return res(ASSIGNMENT, "grant", {"scope": scope, "roleDefinitionId": role, "principalId": "p"},
               depends_on=tuple(u for urns in deps.values() for u in urns), property_dependencies=deps or None)


def test_subscription_scope_fails_and_resource_scope_passes() -> None:
    (found,) = messages(RULE, [grant(SUB, CRYPTO_USER)])
    assert "is a whole subscription or wider" in found[1]
    assert messages(RULE, [grant(KEY_SCOPE, CRYPTO_USER)]) == []


def test_role_outside_the_allowed_list_fails_unless_configured() -> None:
    (found,) = messages(RULE, [grant(KEY_SCOPE, CONTRIBUTOR)])
    assert "is not an allowed role" in found[1]
    assert messages(RULE, [grant(KEY_SCOPE, CONTRIBUTOR)], {"allowedRoleDefinitionIds": [CONTRIBUTOR]}) == []


def test_custom_role_of_the_stack_passes_only_without_wildcards() -> None:
    for actions, expected in ((["Microsoft.Compute/galleries/read"], 0), (["Microsoft.Compute/*"], 1)):
        role = res(DEFINITION, "role", {"scope": f"{SUB}/resourceGroups/rg", "permissions": [{"actions": actions}]})
        assignment = grant(KEY_SCOPE, f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/1234",
                           roleDefinitionId=(role.urn,))
        assert len(messages(RULE, [role, assignment])) == expected


def test_a_custom_role_of_data_actions_passes_only_without_wildcards() -> None:
    # The Slurm head node's munge key role holds Key Vault data actions and no control-plane action.
    for data_actions, expected in ((["Microsoft.KeyVault/vaults/secrets/getSecret/action"], 0),
                                   (["Microsoft.KeyVault/vaults/secrets/*"], 1)):
        role = res(DEFINITION, "role", {"scope": f"{SUB}/resourceGroups/rg",
                                        "permissions": [{"dataActions": data_actions}]})
        assignment = grant(SECRET_SCOPE, f"{SUB}/providers/Microsoft.Authorization/roleDefinitions/1234",
                           roleDefinitionId=(role.urn,))
        assert len(messages(RULE, [role, assignment])) == expected


def test_key_vault_secrets_user_passes_on_one_secret_only() -> None:
    # The Slurm nodes read the munge key's secret; on the vault the role would read every secret in it.
    assert messages(RULE, [grant(SECRET_SCOPE, SECRETS_USER)]) == []
    (found,) = messages(RULE, [grant(f"{SUB}/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv", SECRETS_USER)])
    assert "is not an allowed role" in found[1] and "Key Vault Secrets User on one secret" in found[1]
