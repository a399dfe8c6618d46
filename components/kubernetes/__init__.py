"""The Kubernetes layer every cloud's cluster shares: the components a GPU cluster runs inside itself."""

from __future__ import annotations

from .in_cluster import InCluster, component_objects, refuse_unpinned
from .model import SERVICE_ACCOUNTS, InClusterArgs, InClusterGroup

__all__ = ["SERVICE_ACCOUNTS", "InCluster", "InClusterArgs", "InClusterGroup", "component_objects", "refuse_unpinned"]
