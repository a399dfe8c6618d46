"""Brought keys judged against the account preflight signs in to.

Offline, a brought key of another account is refused only when the stack names an ARN or id of its own (its
account is unknown otherwise: gpufleet/stackfile/keys.py). Preflight knows the account it asks (AWS STS
GetCallerIdentity, the Azure subscription, the Alibaba Cloud account of a RAM role it reads), which is the account
the stack deploys into, so every brought key is judged by the same rule as the plan's (gpufleet/prepare.py
provider_account_problems): the caller's account, the stack's own, or one the organisation grants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.organisation_file import ALLOWED_KEY_ACCOUNTS, KEY_ACCOUNT_RULE

from .findings import Finding

if TYPE_CHECKING:
    from gpufleet.prepare import Prepared


def key_account_findings(cloud: str, prepared: Prepared, caller: str | None, read_from: str) -> list[Finding]:
    """A blocking finding per brought key of another account than `caller` (as `read_from` says it was read) and the
    stack's own, unless the organisation grants it; none when the caller's account could not be read."""
    from gpufleet.prepare import provider_account_problems

    if not caller:
        return []
    return [Finding(f"{cloud}-key-account", problem.path, True,
                    f"{problem.message} (preflight runs as account {caller}: {read_from})",
                    f"give a key of account {caller}, the one these credentials deploy into, or have the organisation "
                    f"grant the key's account (policies/organisation.yaml settings.{KEY_ACCOUNT_RULE}."
                    f"{ALLOWED_KEY_ACCOUNTS})")
            for problem in provider_account_problems(prepared, frozenset({caller.lower()}))]
