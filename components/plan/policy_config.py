"""The policy pack's config for a stack: `gpufleet:policy` from the stack file, plus the settings the
spec implies (budget, region, node groups at max size, image profile, RDMA-required types).

The result has the shape the Pulumi CLI takes with `--policy-pack-config`, so `gpufleet policy-config`
can write the same file for a real `pulumi preview --policy-pack policies`.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from policies.registry import rdma_required_config

from ..resolve import ResolvedCluster, ResolvedGroup
from ..spec import POLICY_KEY, ImagesSpec, SpecError, SpecInvalid
from .policy_floor import exceptions_in_use, organisation, raised_floors


def _group_at_max(cluster: ResolvedCluster, group: ResolvedGroup) -> dict[str, Any]:
    """What the budget rule prices: the primary type at size.max, whatever provisions the group, with the
    stack's own price for that type when `prices` gives one (it wins over the catalog's)."""
    primary = group.spec.instance_types[0]
    entry: dict[str, Any] = {
        "name": group.name, "cloud": cluster.spec.cloud, "instanceType": primary, "maxSize": group.spec.size.max,
    }
    price = cluster.spec.prices.get(primary)
    if price is not None:
        entry["price"] = {"onDemand": price.on_demand, "spot": price.spot, "source": price.source}
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
    user = config.get(POLICY_KEY) or {}
    if not isinstance(user, dict):
        message = "must be a map of policy names to a level (mandatory, advisory, disabled) or settings"
        raise SpecInvalid([SpecError(POLICY_KEY, message)])
    return user


def policy_pack_config(
    config: dict[str, Any], prepared: ResolvedCluster | ImagesSpec | None, stack: str, today: date | None = None
) -> dict[str, Any]:
    """User settings win over derived ones; a bare level ("advisory") keeps the derived settings. The
    organisation's floors apply: a level below one needs an exception (policies/organisation.yaml)."""
    user = user_policy(config)
    org = organisation()
    exceptions_in_use(user, stack, today or date.today(), org)
    user = {**raised_floors(user, org), **user}
    merged: dict[str, Any] = {}
    for name, derived in derived_settings(prepared).items():
        given = user.get(name)
        if isinstance(given, str):
            merged[name] = {"enforcementLevel": given, **derived}
        elif isinstance(given, dict):
            merged[name] = {**derived, **given}
        else:
            merged[name] = derived
    for name, given in user.items():
        merged.setdefault(name, given)
    return dict(sorted(merged.items()))
