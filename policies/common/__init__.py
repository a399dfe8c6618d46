"""Rules that hold on every cloud: required tags, allowed instance types, hourly budget, image lock, key accounts.

Nothing here knows a cloud: the rules that read instance types and group sizes take the readers the
clouds supply (policies/<cloud>/), merged by the registry.
"""

from __future__ import annotations

from ..cloud import Readers
from ..meta import Rule
from . import budget, image_lock, instance_types, key_accounts, tags


def rules(readers: Readers) -> list[Rule]:
    return [tags.RULE, instance_types.rule(readers), budget.rule(readers), image_lock.RULE, key_accounts.RULE]
