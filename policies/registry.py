"""Every rule of the pack, in a stable order, with its catalog entry.

A cloud adds its rules by appending its module's RULES here (policies/azure.py, policies/alicloud.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pulumi_policy import Policy

from . import aws, crosscloud
from .meta import Rule

RULES: list[Rule] = [*aws.RULES, *crosscloud.RULES]
ALL_POLICIES: list[Policy] = [rule.policy for rule in RULES]
RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}

if len(RULES_BY_NAME) != len(RULES):
    raise RuntimeError("policy names must be unique")

RDMA_RULES = ("aws-efa-interface-count", "aws-efa-interface-count-advisory")


def rdma_required_config(instance_types: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Pack config naming the instance types of `rdma: required` node groups.

    Both EFA count rules read the list: the mandatory one checks those types, the advisory one the rest.
    """
    listed = sorted(set(instance_types))
    return {name: {"rdmaRequiredInstanceTypes": listed} for name in RDMA_RULES}
