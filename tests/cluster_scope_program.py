"""Run one build step of a cluster under the offline engine: the step gets the ClusterScope of a resolved stack, its
parent the cluster component, as the cloud's program gives it; the test reads what the step registered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi

from components.clouds.scope import ClusterScope
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.plan.engine import run_program


def registered_by(resolved: ResolvedCluster, step: Callable[[ClusterScope], None]) -> list[Any]:
    """What `step` registers in the scope of `resolved`'s cluster component."""
    spec = resolved.spec

    def program() -> None:
        parent = pulumi.ComponentResource(f"gpufleet:{spec.cloud}:Cluster", spec.name)
        step(ClusterScope.of(resolved, parent))

    config = {"gpufleet:cluster": "{}", f"{spec.cloud}:region": spec.region}
    return run_program(program, config, project="gpufleet", stack="test", region=spec.region,
                       zones=list(spec.network.zones))
