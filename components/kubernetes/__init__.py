"""The Kubernetes layer every cloud's cluster shares: the components a GPU cluster runs inside itself."""

from __future__ import annotations

from .in_cluster import InCluster, component_objects, refuse_unpinned
from .model import SERVICE_ACCOUNTS, InClusterArgs, InClusterGroup
from .node_check import NODE_CHECK_TAINT

__all__ = [
    "NODE_CHECK_TAINT",
    "SERVICE_ACCOUNTS",
    "InCluster",
    "InClusterArgs",
    "InClusterGroup",
    "component_objects",
    "refuse_unpinned",
]
