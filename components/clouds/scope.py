"""What every step of a cluster constructor reads: the resolved stack, the component its resources hang under and
the tags they carry. Each cloud's cluster.py is a list of `create_*` steps over one scope."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.clouds.naming import stack_base
from gpufleet.stackfile.models import ClusterSpec

from ..tags import resource_tags


@dataclass(frozen=True)
class ClusterScope:
    """Shared by one cluster's steps; every resource a step creates directly takes `child`."""

    resolved: ResolvedCluster
    parent: pulumi.ComponentResource
    """The cluster component."""
    child: pulumi.ResourceOptions
    """Options of every direct child: parented to the cluster."""
    tags: dict[str, str]
    """The user's tags plus the cluster and environment keys."""

    @classmethod
    def of(cls, resolved: ResolvedCluster, parent: pulumi.ComponentResource) -> ClusterScope:
        spec = resolved.spec
        tags = resource_tags(spec.tags, spec.name, spec.environment)
        return cls(resolved, parent, pulumi.ResourceOptions(parent=parent), tags)

    @property
    def spec(self) -> ClusterSpec:
        return self.resolved.spec

    @property
    def name(self) -> str:
        """The cluster's name, the prefix of every child's name."""
        return self.resolved.spec.name

    @property
    def base(self) -> str:
        """The cluster in its environment (naming.stack_base): the base of every name unique in a region or wider,
        so two environments of one cluster never ask for the same one."""
        return stack_base(self.resolved.spec.name, self.resolved.spec.environment)

    @property
    def prod(self) -> bool:
        """A prod stack protects what holds data (keys, file systems) and takes a NAT gateway per zone."""
        return self.resolved.spec.environment == "prod"

    def invoke(self) -> pulumi.InvokeOutputOptions:
        """Options of an invoke made for the cluster (caller identity, client config)."""
        return pulumi.InvokeOutputOptions(parent=self.parent)
