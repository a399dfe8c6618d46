"""What a preflight check reports, and the error that stops preflight before any finding."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One answer of the account that the stack does not fit."""

    check: str
    """Stable id of the check, `<cloud>-<what>` (e.g. aws-quota, azure-feature, alicloud-zone-offering)."""
    field: str
    """Stack-file field path the finding is about, as validation errors write it from the stack's root key
    (e.g. node_groups[0].size.max, network.subnet_ids[1], storage.kms_key)."""
    blocking: bool
    """True: `pulumi up` would fail or build something else (exit 1). False: advisory, printed only."""
    says: str
    """What the account answered (e.g. 'quota L-417A185B is 384 vCPUs; size.max needs 3,072')."""
    fix: str
    """What the user does about it (e.g. 'request 3,072 vCPUs in Service Quotas, or lower size.max')."""


class PreflightUnavailable(Exception):
    """No usable credentials, or an API error the user can fix (access denied, unknown region): exit 2 with the
    message, which names the credential source or the call and what to do."""
