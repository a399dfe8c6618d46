"""The policy pack's config for a stack: `gpufleet:policy` from the stack file, plus the settings the
spec implies (budget, region, node groups at max size, image profile, RDMA-required types).

The result has the shape the Pulumi CLI takes with `--policy-pack-config`, so `gpufleet policy-config`
can write the same file for a real `pulumi preview --policy-pack policies`.
"""

from __future__ import annotations

from typing import Any

from policies.registry import rdma_required_config

from ..spec import POLICY_KEY, ClusterSpec, ImagesSpec, NodeGroup


def _group_at_max(spec: ClusterSpec, group: NodeGroup) -> dict[str, Any]:
    """What the budget rule prices: the primary type at size.max, whatever provisions the group."""
    return {"name": group.name, "cloud": spec.cloud, "instanceType": group.instance_types[0], "maxSize": group.size.max}


def derived_settings(spec: ClusterSpec | ImagesSpec | None) -> dict[str, dict[str, Any]]:
    if isinstance(spec, ImagesSpec):
        return {"image-lock-valid": {"profile": spec.profile, "requiredRegions": {spec.cloud: list(spec.regions)}}}
    if spec is None:
        return {}
    settings: dict[str, dict[str, Any]] = {
        "image-lock-valid": {"profile": spec.image, "requiredRegions": {spec.cloud: [spec.region]}},
        "hourly-budget": {"region": spec.region, "nodeGroups": [_group_at_max(spec, g) for g in spec.node_groups]},
    }
    if spec.budget.max_hourly_usd is not None:
        settings["hourly-budget"]["maxHourlyUsd"] = spec.budget.max_hourly_usd
    required = sorted({t for g in spec.node_groups if g.rdma == "required" for t in g.instance_types})
    settings.update(rdma_required_config(required))
    return settings


def policy_pack_config(config: dict[str, Any], spec: ClusterSpec | ImagesSpec | None) -> dict[str, Any]:
    """User settings win over derived ones; a bare level ("advisory") keeps the derived settings."""
    user = config.get(POLICY_KEY) or {}
    merged: dict[str, Any] = {}
    for name, derived in derived_settings(spec).items():
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
