"""The policy pack's config for a stack: `gpufleet:policy` from the stack file, plus the settings the
spec implies (budget, region, node groups at max size, image profile, RDMA-required types).

The result has the shape the Pulumi CLI takes with `--policy-pack-config`, so `gpufleet policy-config`
can write the same file for a real `pulumi preview --policy-pack policies`.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from policies.registry import RULES_BY_NAME, rdma_required_config

from ..resolve import ResolvedCluster, ResolvedGroup
from ..stackfile.errors import SpecError, SpecInvalid
from ..stackfile.models import POLICY_KEY, ImagesSpec
from .floor import exceptions_in_use, organisation, raised_floors
from .settings import requested_level
from .tighten import tighten


def _group_at_max(cluster: ResolvedCluster, group: ResolvedGroup) -> dict[str, Any]:
    """What the budget rule prices: every type of the group (it takes the most expensive, since any of them may
    provision the whole group) at size.max, with the stack's own price for a type where `prices` gives one."""
    entry: dict[str, Any] = {
        "name": group.name, "cloud": cluster.spec.cloud, "instanceTypes": list(group.spec.instance_types),
        "maxSize": group.spec.size.max,
    }
    given = {t: cluster.spec.prices[t] for t in group.spec.instance_types if t in cluster.spec.prices}
    if given:
        entry["prices"] = {t: {"onDemand": p.on_demand, "spot": p.spot, "source": p.source} for t, p in given.items()}
    return entry


def derived_settings(prepared: ResolvedCluster | ImagesSpec | None) -> dict[str, dict[str, Any]]:
    if isinstance(prepared, ImagesSpec):
        regions = {prepared.cloud: list(prepared.regions)}
        return {"image-lock-valid": {"profile": prepared.profile, "requiredRegions": regions}}
    if prepared is None:
        return {}
    spec = prepared.spec
    settings: dict[str, dict[str, Any]] = {
        "image-lock-valid": {"profile": spec.image, "requiredRegions": {spec.cloud: [spec.region]}},
        "hourly-budget": {"region": spec.region, "nodeGroups": [_group_at_max(prepared, g) for g in prepared.groups]},
    }
    if spec.budget.max_hourly_usd is not None:
        settings["hourly-budget"]["maxHourlyUsd"] = spec.budget.max_hourly_usd
    # Every type of a group that runs RDMA (required, or auto on a type with a fabric), as resolved once.
    required = sorted({t for g in prepared.groups if g.rdma for t in g.spec.instance_types})
    settings.update(rdma_required_config(required))
    return settings


def user_policy(config: dict[str, Any]) -> dict[str, Any]:
    """The stack's `gpufleet:policy`, checked to be a map."""
    user = config.get(POLICY_KEY)
    if user is None:
        return {}
    if not isinstance(user, dict):
        message = "must be a map of policy names to a level (mandatory, advisory, disabled) or settings"
        raise SpecInvalid([SpecError(POLICY_KEY, message)])
    return user


def policy_pack_config(
    config: dict[str, Any], prepared: ResolvedCluster | ImagesSpec | None, stack: str, today: date | None = None
) -> dict[str, Any]:
    """Settings in layers, each only tightening the one before (tighten.tighten): the organisation's,
    the ones the spec derives, then the stack's `gpufleet:policy`, which is refused (exit 2) where it would loosen.
    Levels: the stack's own, checked against the organisation's floors (a level below one needs an exception),
    else the organisation's raised floor, however the stack writes the rule ({}, null), else the pack's."""
    user = user_policy(config)
    org = organisation()
    exceptions_in_use(user, stack, today or date.today(), org)
    derived = derived_settings(prepared)
    floors = raised_floors(org)
    all_level = requested_level(user.get("all"))
    merged: dict[str, Any] = {}
    for name in sorted({*org.settings, *derived, *user, *floors}):
        given = user.get(name)
        if name not in RULES_BY_NAME or not (given is None or isinstance(given, (str, dict))):
            merged[name] = given  # "all", an unknown rule or a malformed entry: resolve_config names the problem
            continue
        settings = tighten(name, {}, org.settings.get(name, {}), f"organisation settings.{name}", refuse=False)
        settings = tighten(name, settings, derived.get(name, {}), name, refuse=False)
        if isinstance(given, dict):
            settings = tighten(name, settings, given, f"{POLICY_KEY}.{name}")
        level = requested_level(given) or (None if all_level else floors.get(name))
        merged[name] = {**({"enforcementLevel": level} if level else {}), **settings}
    return merged
