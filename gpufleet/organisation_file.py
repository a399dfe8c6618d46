"""Where the organisation's policy file is, and the one setting of it that stack-file validation reads.

The pack's config layer reads and judges the whole file (floors, exceptions, settings: gpufleet/pack_config/floor.py).
Keys are judged earlier, while the stack-file models validate, so from here they read only the accounts the
organisation grants every stack's keys (settings.customer-key-account.allowedKeyAccounts); a malformed file is
refused by the config layer when the plan or the pack reads it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

ORGANISATION_FILE = Path(__file__).resolve().parents[1] / "policies" / "organisation.yaml"
KEY_ACCOUNT_RULE, ALLOWED_KEY_ACCOUNTS = "customer-key-account", "allowedKeyAccounts"


def granted_key_accounts() -> frozenset[str]:
    """The accounts the organisation file grants every stack's keys besides the stack's own (lower case)."""
    return granted_key_accounts_in(ORGANISATION_FILE)


@cache
def granted_key_accounts_in(path: Path) -> frozenset[str]:
    """The same, read from `path` once per process."""
    from .yaml_model import read_yaml  # on first use: `gpufleet policies` lists the rules without reading YAML

    found = read_yaml(path) if path.is_file() else None
    settings = found.get("settings") if isinstance(found, dict) else None
    rule = settings.get(KEY_ACCOUNT_RULE) if isinstance(settings, dict) else None
    granted = rule.get(ALLOWED_KEY_ACCOUNTS) if isinstance(rule, dict) else None
    return frozenset(str(account).lower() for account in granted) if isinstance(granted, list) else frozenset()
