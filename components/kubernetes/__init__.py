"""The Kubernetes layer every cloud's cluster shares: the components a GPU cluster runs inside itself."""

from __future__ import annotations

# The model first: the GPU-sharing module imports InClusterGroup from here while this package loads.
from .model import DEVICE_PLUGIN_CONFIG_LABEL, SERVICE_ACCOUNTS, InClusterArgs, InClusterGroup  # isort: skip
from .in_cluster import InCluster, component_objects, refuse_unpinned
from .nvidia import node_labels

__all__ = [
    "DEVICE_PLUGIN_CONFIG_LABEL", "SERVICE_ACCOUNTS", "InCluster", "InClusterArgs", "InClusterGroup",
    "component_objects", "node_labels", "refuse_unpinned",
]
