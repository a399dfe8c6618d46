"""One judgement of a brought encryption key: a customer key of the stack's own region and account, never a
provider-managed key.

The stack's account is the one its other ARNs and resource ids name (an instance profile, an alarm topic, an
Azure identity or metrics scope: `named_accounts`); a key of another account is refused unless the organisation
file grants that account (`settings: {customer-key-account: {allowedKeyAccounts: [...]}}`: AWS account ids,
Alibaba Cloud account ids, Azure subscription ids). A stack that names no account of its own cannot be compared.

Used by the cluster and image stack models (storage.kms_key, key_vault_id, kms_key, replica_kms_keys), by the
encryption rules of every cloud (policies/*/encryption.py, the AWS image pipeline's recipe and distribution) and by
the pack's customer-key-account rule (policies/common/key_accounts.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..organisation_file import ALLOWED_KEY_ACCOUNTS, KEY_ACCOUNT_RULE, granted_key_accounts

# Alias prefixes the providers reserve for the keys they manage for their services (data encrypted with them is
# not under the customer's key policy, rotation or revocation):
# AWS: "The alias/aws/ prefix is reserved for AWS managed key" (KMS Developer Guide, Create aliases,
# docs.aws.amazon.com/kms/latest/developerguide/alias-create.html).
# Alibaba Cloud: "alias/acs/<service> - reserved by KMS for service keys (for example, alias/acs/oss)" (KMS,
# Manage a key alias, alibabacloud.com/help/en/kms/user-guide/manage-a-key-alias).
PROVIDER_ALIASES = {"aws": "alias/aws/", "alicloud": "alias/acs/"}

# ARN of a key or alias: region and account (AWS arn:PARTITION:kms:REGION:ACCOUNT:..., Alibaba acs:kms:REGION:
# ACCOUNT:...).
_KEY_ARN = re.compile(r"^(?:arn:aws(?:-[a-z]+)*|acs):kms:(?P<region>[a-z0-9-]*):(?P<account>\d*):")
# The account in any AWS / Alibaba ARN the stack names (a role, a topic, a boundary): the stack's own account.
_ANY_ARN = re.compile(r"^(?:arn:aws(?:-[a-z]+)*|acs):[a-z0-9-]+:[a-z0-9-]*:(?P<account>\d{10,16}):")
# The subscription of any Azure resource id (/subscriptions/<id>/resourceGroups/...), compared in lower case.
_AZURE_ID = re.compile(r"^/subscriptions/(?P<account>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                       r"[0-9a-fA-F]{12})/", re.IGNORECASE)
# A key reference a resource may carry: a KMS key or alias ARN (AWS, Alibaba) or a Key Vault's resource id (Azure).
KEY_REFERENCE = re.compile(r"^(?:(?:arn:aws(?:-[a-z]+)*|acs):kms:[a-z0-9-]*:\d*:|/subscriptions/[^/]+/resourceGroups/"
                           r"[^/]+/providers/Microsoft\.KeyVault/vaults/)", re.IGNORECASE)
# Provider settings a stack file names its own account with (pulumi-aws config allowedAccountIds: the provider refuses
# any other account; pulumi-azure-native subscriptionId; pulumi-alicloud accountId; each package's config/vars.py).
PROVIDER_ACCOUNT_KEYS = ("aws:allowedAccountIds", "azure-native:subscriptionId", "alicloud:accountId")
# The organisation setting that grants key accounts beyond the stack's own (policies/organisation.yaml).
STACK_ACCOUNTS = "stackAccounts"


def provider_managed(cloud: str, key: object) -> bool:
    """Whether `key` (id, alias or ARN) names a key the provider manages for a service."""
    prefix = PROVIDER_ALIASES.get(cloud)
    if prefix is None or not isinstance(key, str):
        return False
    text = key.strip().lower()
    return text.startswith(prefix) or f":{prefix}" in text


def key_problem(
    cloud: str, key: str, region: str, accounts: frozenset[str] = frozenset(), allowed: frozenset[str] | None = None
) -> str | None:
    """Why `key` cannot be the stack's customer key in `region`, or None. `accounts`: the accounts the stack
    names elsewhere; a key ARN of another account is refused when there are any, unless `allowed` (default: the
    organisation's grants) lists it."""
    if not key.strip():
        return "is blank: write create or the id of a customer-managed key"
    if key != key.strip() or any(ch.isspace() for ch in key):
        return f"{key!r} has spaces: write the key id or ARN alone"
    if provider_managed(cloud, key):
        return (f"{key!r} is a key the provider manages for its service ({PROVIDER_ALIASES[cloud]}...): "
                "use create or a customer-managed key of the stack's account")
    found = _KEY_ARN.match(key)
    if found and found["region"] != region:
        return f"{key!r} is a key in {found['region'] or 'no region'}; a KMS key is regional, give one in {region}"
    return account_problem(key, accounts, allowed)


def key_account(reference: object) -> str | None:
    """The account a key ARN or a Key Vault id names (an Azure subscription in lower case); None when none."""
    if not isinstance(reference, str):
        return None
    found = _KEY_ARN.match(reference.strip()) or _AZURE_ID.match(reference.strip())
    return found["account"].lower() if found and found["account"] else None


def account_problem(reference: str, accounts: frozenset[str], allowed: frozenset[str] | None = None) -> str | None:
    """Why a key (or vault) of another account than the stack's cannot hold its data, or None: `accounts` are the
    stack's (none known: nothing to compare), `allowed` the accounts the organisation grants besides."""
    account = key_account(reference)
    granted = granted_key_accounts() if allowed is None else allowed
    if account is None or not accounts or account in accounts | granted:
        return None
    return (f"{reference!r} is a key of account {account}, not the stack's ({', '.join(sorted(accounts))}): use a "
            f"key of the stack's own account, or have the organisation grant {account} in policies/organisation.yaml "
            f"(settings.{KEY_ACCOUNT_RULE}.{ALLOWED_KEY_ACCOUNTS})")



def arn_accounts(*values: object) -> frozenset[str]:
    """The accounts of the ARNs and Azure resource ids among `values` (others, lists included, ignored: a list names
    data the stack reads, possibly of another account, not the stack itself)."""
    return frozenset(m["account"].lower() for v in values
                     if isinstance(v, str) and (m := _ANY_ARN.match(v.strip()) or _AZURE_ID.match(v.strip())))


def provider_accounts(config: Mapping[str, Any]) -> frozenset[str]:
    """The accounts the stack's provider settings name (a list, or the JSON or comma-separated text the CLI sends)."""
    found: set[str] = set()
    for key in PROVIDER_ACCOUNT_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip().startswith("["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        items = value if isinstance(value, list) else str(value).split(",") if value is not None else []
        found.update(str(item).strip().lower() for item in items if str(item).strip())
    return frozenset(found)
