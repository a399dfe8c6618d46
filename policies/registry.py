"""Every rule of the pack, in a stable order: each cloud's rules, the shared folders' rules, then the common ones.

The cloud list is the project's one (gpufleet.clouds.registry): every cloud has a package
policies/<cloud>/ exporting POLICIES (its rules and its readers); a shared folder (policies/kubernetes/: rules
for every cloud's Kubernetes clusters) exports POLICIES the same way and is loaded on every cloud. The common
rules read through the merged readers. Nothing here names a cloud.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from gpufleet.clouds.registry import CLOUDS as CLOUD_NAMES

from . import common, kubernetes
from .cloud import RDMA_IN_USE_TYPES, RDMA_REQUIRED_GROUPS, CloudPolicies, Readers
from .meta import Rule

CLOUDS: tuple[CloudPolicies, ...] = tuple(import_module(f"{__package__}.{name}").POLICIES for name in CLOUD_NAMES)
# Folders of rules that hold on every cloud, loaded as a cloud's folder is.
SHARED: tuple[CloudPolicies, ...] = (kubernetes.POLICIES,)
READERS: Readers = Readers.merge(part.readers for part in (*CLOUDS, *SHARED))
RULES: list[Rule] = [*(rule for part in (*CLOUDS, *SHARED) for rule in part.rules), *common.rules(READERS)]
RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}

if len(RULES_BY_NAME) != len(RULES):
    raise RuntimeError("policy names must be unique")

if TYPE_CHECKING:
    from pulumi_policy import Policy

    ALL_POLICIES: list[Policy]


def __getattr__(name: str) -> Any:
    """ALL_POLICIES, the pack's policy objects, built from the policy SDK on first read: the rule catalog
    (RULES) is plain data, so `gpufleet policies` never loads the SDK."""
    if name != "ALL_POLICIES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    policies = [rule.policy for rule in RULES]
    globals()[name] = policies  # read once: later reads find the module attribute
    return policies


def declared_types(policy: Policy) -> frozenset[str] | None:
    """The resource types a pack rule's policy looks at (it reports nothing on any other); None for a policy that is
    not one of the pack's rules. The offline runner and the pack's servicer both call a rule on these types only."""
    rule = RULES_BY_NAME.get(policy.name)
    return frozenset(rule.resource_types) if rule is not None and rule.policy is policy else None


def _reads(rule: Rule, setting: str) -> bool:
    schema = rule.config_schema
    return schema is not None and setting in schema.properties


def _for_every_reader(setting: str, values: Iterable[str]) -> dict[str, dict[str, Any]]:
    listed = sorted(set(values))
    return {rule.name: {setting: listed} for rule in RULES if _reads(rule, setting)}


def rdma_in_use_config(instance_types: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Pack config naming the instance types of node groups that run RDMA, for every rule that reads it.

    On AWS both EFA count rules read the list: the mandatory one checks those types, the advisory one
    the rest (CrossGuard fixes one level per rule).
    """
    return _for_every_reader(RDMA_IN_USE_TYPES, instance_types)


def rdma_required_config(groups: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Pack config naming the node groups with `rdma: required`, for every rule that reads it (the Slurm partition
    rules: the resources show RDMA in use, not whether the stack requires it)."""
    return _for_every_reader(RDMA_REQUIRED_GROUPS, groups)
