"""Stand-in for the GPU-sharing module another change supplies (same name and function): the NVIDIA device plugin's
config file content for a node group's sharing mode. Config format: NVIDIA/k8s-device-plugin README.md at v0.20.0
("Shared Access to GPUs": version v1, flags.migStrategy, sharing.timeSlicing.resources[].name/replicas)."""

from __future__ import annotations

from typing import Any

from .model import InClusterGroup


def device_plugin_config(group: InClusterGroup) -> dict[str, Any] | None:
    """The plugin config for the group, or None where whole GPUs are advertised (the plugin's default config)."""
    if group.sharing_mode == "time-slicing":
        replicas = group.time_slicing_replicas or 1
        return {"version": "v1", "flags": {"migStrategy": "none"},
                "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}}
    if group.sharing_mode == "mig":
        # one profile on every GPU of the node (all-<profile>): the single strategy advertises nvidia.com/gpu
        return {"version": "v1", "flags": {"migStrategy": "single"}}
    return None
