"""One judgement of a brought encryption key: a customer key of the stack's own region (and account, where the
stack names one), never a provider-managed key.

Used by the cluster and image stack models (storage.kms_key, kms_key, replica_kms_keys) and by the encryption
rules of every cloud (policies/*/encryption.py, the AWS image pipeline's recipe and distribution).
"""

from __future__ import annotations

import re

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


def provider_managed(cloud: str, key: object) -> bool:
    """Whether `key` (id, alias or ARN) names a key the provider manages for a service."""
    prefix = PROVIDER_ALIASES.get(cloud)
    if prefix is None or not isinstance(key, str):
        return False
    text = key.strip().lower()
    return text.startswith(prefix) or f":{prefix}" in text


def key_problem(cloud: str, key: str, region: str, accounts: frozenset[str] = frozenset()) -> str | None:
    """Why `key` cannot be the stack's customer key in `region`, or None. `accounts`: the accounts the stack
    names elsewhere; a key ARN of another account is refused when there are any."""
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
    if found and accounts and found["account"] not in accounts:
        return (f"{key!r} is a key of account {found['account']}, not the stack's ({', '.join(sorted(accounts))}): "
                "use a key of the stack's own account")
    return None


def arn_accounts(*values: object) -> frozenset[str]:
    """The accounts of the ARNs among `values` (others ignored)."""
    return frozenset(m["account"] for v in values if isinstance(v, str) and (m := _ANY_ARN.match(v.strip())))
