"""Tags every taggable resource carries: the user's, plus the cluster and environment they belong to."""

from __future__ import annotations

from collections.abc import Mapping


def resource_tags(user: Mapping[str, str], cluster: str, environment: str, **extra: str) -> dict[str, str]:
    """User tags first; gpufleet's own keys win so cost reports can always group by cluster."""
    return dict(sorted({**user, "gpufleet:cluster": cluster, "gpufleet:environment": environment, **extra}.items()))
