"""The policy pack's config for a stack: `gpufleet:policy` from the stack file, plus the settings the
spec implies (budget, region, node groups at max size, image profile, the types of groups that run RDMA).

The result has the shape the Pulumi CLI takes with `--policy-pack-config`, so `gpufleet policy-config`
can write the same file for a real `pulumi preview --policy-pack policies`.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from policies.registry import RULES_BY_NAME, rdma_in_use_config, rdma_required_config

from ..clouds.backend import ResolvedCluster, ResolvedGroup
from ..stackfile.checks import stack_accounts
from ..stackfile.config_keys import POLICY_KEY
from ..stackfile.errors import SpecError, SpecInvalid
from ..stackfile.keys import KEY_ACCOUNT_RULE, STACK_ACCOUNTS, arn_accounts, provider_accounts
from ..stackfile.models import ImagesSpec
from .floor import exceptions_in_use, organisation, raised_floors
from .settings import LEVELS, requested_level
from .tighten import tighten


def _group_at_max(cluster: ResolvedCluster, group: ResolvedGroup) -> dict[str, Any]:
    """What the budget rule prices: every type of the group (it takes the most expensive, since any of them may
    provision the whole group) at size.max, with the stack's own price for a type where `prices` gives one."""
    return _priced_entry(cluster, group.name, list(group.spec.instance_types), group.spec.size.max)


def _priced_entry(cluster: ResolvedCluster, name: str, types: list[str], max_size: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "cloud": cluster.spec.cloud, "instanceTypes": types, "maxSize": max_size}
    given = {t: cluster.spec.prices[t] for t in types if t in cluster.spec.prices}
    if given:
        entry["prices"] = {t: {"onDemand": p.on_demand, "spot": p.spot, "source": p.source} for t, p in given.items()}
    return entry


def _cpu_at_max(cluster: ResolvedCluster) -> list[dict[str, Any]]:
    """A Kubernetes cluster's system group and a Slurm cluster's head node, priced like node groups at their max
    (nothing for a plain VM cluster)."""
    found = []
    if (system := cluster.system_type) is not None:
        found.append(_priced_entry(cluster, "system group", [system[0]], cluster.spec.scheduler.system_group.size.max))
    if (head := cluster.head_node_type) is not None:
        found.append(_priced_entry(cluster, "slurm head node", [head[0]], 1))
    return found


def _own_accounts(accounts: frozenset[str]) -> dict[str, dict[str, Any]]:
    """The stack's accounts for the key-account rule, where it names any (else the rule cannot compare)."""
    return {KEY_ACCOUNT_RULE: {STACK_ACCOUNTS: sorted(accounts)}} if accounts else {}


def derived_settings(
    prepared: ResolvedCluster | ImagesSpec | None, accounts: frozenset[str] = frozenset()
) -> dict[str, dict[str, Any]]:
    """`accounts`: the ones the stack's provider settings name (keys.provider_accounts)."""
    if isinstance(prepared, ImagesSpec):
        regions = {prepared.cloud: list(prepared.regions)}
        # The provider's account, else the brought build key's: the replicas must be of it (spec: replica_kms_keys).
        own = accounts or arn_accounts(getattr(prepared, "kms_key", None))
        return {"image-lock-valid": {"profile": prepared.profile, "requiredRegions": regions}, **_own_accounts(own)}
    if prepared is None:
        return {}
    spec = prepared.spec
    settings: dict[str, dict[str, Any]] = {
        "image-lock-valid": {"profile": spec.image, "requiredRegions": {spec.cloud: [spec.region]}},
        "hourly-budget": {"region": spec.region, "nodeGroups": [
            *(_group_at_max(prepared, g) for g in prepared.groups), *_cpu_at_max(prepared)]},
        **_own_accounts(stack_accounts(spec) | accounts),
    }
    if spec.budget.max_hourly_usd is not None:
        settings["hourly-budget"]["maxHourlyUsd"] = spec.budget.max_hourly_usd
    if spec.cloud == "azure" and spec.storage.shared is not None:
        # Azure Managed Lustre's subnet admits AzureMonitor on any TCP port (Microsoft's configure-network-security-
        # group.md, inbound rule 112; components/clouds/azure/shared_storage.py): that service tag, and only with it.
        for rule in ("azure-no-internet-admin-inbound", "azure-admin-inbound-per-group"):
            settings[rule] = {"allowedServiceTags": ["AzureMonitor"]}
    # Every type of a group that runs RDMA (required, or auto on a type with a fabric), as resolved once.
    settings.update(rdma_in_use_config(t for g in prepared.groups if g.rdma for t in g.spec.instance_types))
    if spec.scheduler.kind == "slurm":
        settings.update(rdma_required_config(g.name for g in prepared.groups if g.spec.rdma == "required"))
    return settings


def user_policy(config: dict[str, Any]) -> dict[str, Any]:
    """The stack's `gpufleet:policy`, checked to be a map."""
    user = config.get(POLICY_KEY)
    if user is None:
        return {}
    if not isinstance(user, dict):
        message = "must be a map of policy names to a level (mandatory, advisory, disabled) or settings"
        raise SpecInvalid([SpecError(POLICY_KEY, message)])
    # Every level the stack writes is one of the pack's, however it writes it (`Disabled`, 0): layering below reads
    # levels it knows only, and would drop another one silently.
    problems = []
    for name, given in user.items():
        written = given.get("enforcementLevel") if isinstance(given, dict) else given
        if (isinstance(given, str) or (isinstance(given, dict) and "enforcementLevel" in given)) \
                and requested_level(given) is None:
            where = f"{POLICY_KEY}.{name}" + (".enforcementLevel" if isinstance(given, dict) else "")
            problems.append(SpecError(where, f"{written!r} is not an enforcement level (one of {', '.join(LEVELS)})"))
    if problems:
        raise SpecInvalid(problems)
    return user


def policy_pack_config(
    config: dict[str, Any], prepared: ResolvedCluster | ImagesSpec | None, stack: str | None,
    today: date | None = None,
) -> dict[str, Any]:
    """Settings in layers, each only tightening the one before (tighten.tighten): the organisation's,
    the ones the spec derives, then the stack's `gpufleet:policy`, which is refused (exit 2) where it would loosen.
    Levels: the stack's own, checked against the organisation's floors (a level below one needs an exception),
    else the organisation's raised floor, however the stack writes the rule ({}, null), else the pack's.
    `stack`: the name organisation exceptions may grant (policy_floor.bound_stack), None for none."""
    user = user_policy(config)
    org = organisation()
    exceptions_in_use(user, stack, today or date.today(), org)
    derived = derived_settings(prepared, provider_accounts(config))
    floors = raised_floors(org)
    all_level = requested_level(user.get("all"))
    merged: dict[str, Any] = {}
    for name in sorted({*org.settings, *derived, *user, *floors}):
        given = user.get(name)
        if name not in RULES_BY_NAME or not (given is None or isinstance(given, (str, dict))):
            merged[name] = given  # "all", an unknown rule or a malformed entry: resolve_config names the problem
            continue
        # The organisation's settings are the first layer, as written (checked when the file is read): its grants
        # (FEWER_GRANTS) are what a stack may narrow, so they must not be combined with an empty layer before them.
        settings = {key: value for key, value in org.settings.get(name, {}).items() if value is not None}
        settings = tighten(name, settings, derived.get(name, {}), name, refuse=False)
        if isinstance(given, dict):
            settings = tighten(name, settings, given, f"{POLICY_KEY}.{name}")
        level = requested_level(given) or (None if all_level else floors.get(name))
        merged[name] = {**({"enforcementLevel": level} if level else {}), **settings}
    return merged
