"""The registry of cross-field checks every cloud shares: modules of checks register with these decorators, and
gpufleet/stackfile/checks.py runs them in registration order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .errors import SpecError

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster, ResolvedGroup

Check = Callable[["ResolvedCluster"], Iterator[SpecError]]
GroupCheck = Callable[["ResolvedCluster", "ResolvedGroup"], Iterator[SpecError]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    """Register a check of the whole cluster."""
    CHECKS.append(fn)
    return fn


def group_check(fn: GroupCheck) -> GroupCheck:
    """Register a check that runs once per node group."""

    def each_group(cluster: ResolvedCluster) -> Iterator[SpecError]:
        for group in cluster.groups:
            yield from fn(cluster, group)

    each_group.__name__ = fn.__name__
    CHECKS.append(each_group)
    return fn
