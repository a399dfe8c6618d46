"""What the in-cluster component is told about the cluster and its node groups (the same for EKS, AKS and ACK)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi

FABRICS = ("efa", "infiniband", "erdma", "none")
# memory-isolated: Alibaba's cGPU (ack-ai-installer), ACK only.
SHARING_MODES = ("none", "mig", "time-slicing", "memory-isolated")
# component -> (namespace, service account) of the components that call the cloud's API: the cloud side grants each
# its role (EKS Pod Identity). Cluster Autoscaler resizes the Auto Scaling groups (AWS only: AKS and ACK scale
# their node pools themselves).
SERVICE_ACCOUNTS: Mapping[str, tuple[str, str]] = {"cluster-autoscaler": ("kube-system", "cluster-autoscaler")}


@dataclass(frozen=True)
class InClusterGroup:
    """One node group as the in-cluster components see it: where its nodes are, what they carry, how they scale."""

    name: str
    fabric: str
    instance_types: tuple[str, ...]
    gpus_per_node: int
    min_size: int
    max_size: int
    scaling_group_name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[tuple[str, str, str], ...] = ()
    sharing_mode: str = "none"
    mig_profile: str | None = None
    time_slicing_replicas: int | None = None
    spot: bool = False
    """Spot capacity may run in the group (capacity spot or mixed): its spot nodes get the termination handler."""

    def __post_init__(self) -> None:
        if self.fabric not in FABRICS:
            raise ValueError(f"node group {self.name!r}: fabric {self.fabric!r} is not one of {', '.join(FABRICS)}")
        if self.sharing_mode not in SHARING_MODES:
            raise ValueError(f"node group {self.name!r}: sharing_mode {self.sharing_mode!r} is not one of "
                             f"{', '.join(SHARING_MODES)}")
        if not self.instance_types:
            raise ValueError(f"node group {self.name!r}: instance_types is empty")
        if not 0 <= self.min_size <= self.max_size:
            raise ValueError(f"node group {self.name!r}: sizes {self.min_size}..{self.max_size} are not "
                             "0 <= min <= max")


@dataclass(frozen=True)
class SystemScaling:
    """The system group as Cluster Autoscaler resizes it (AWS: the EKS managed node group's Auto Scaling group, whose
    name EKS chooses, so an output of the node group)."""

    min_size: int
    max_size: int
    scaling_group_name: pulumi.Input[str]


@dataclass(frozen=True)
class InClusterArgs:
    """The cluster the components go into: its cloud, name (an output on a real run), version, region and groups."""

    cloud: str
    cluster_name: pulumi.Input[str]
    kubernetes_version: str
    region: str
    groups: tuple[InClusterGroup, ...]
    driver: str | None = None
    """The lock profile's NVIDIA driver version, for clouds whose node image carries none (AKS: the GPU Operator's
    driver container installs it); None where the node image carries the pinned driver (EKS, ACK)."""
    job_operators: tuple[str, ...] = ()
    """The job operators to install (scheduler.job_operators: mpi, training), on the system group."""
    system_scaling: SystemScaling | None = None
    """The system group for Cluster Autoscaler to resize (AWS); None where the cloud scales its pools itself."""
    node_check: Mapping[str, Mapping[str, Any]] | None = None
    """Per node group, the expect.json document the node check compares its nodes with (components.bootstrap
    .cloud_init.expect_document's shape), for clouds whose nodes run the check from a DaemonSet (AKS, ACK); None
    elsewhere."""

    def __post_init__(self) -> None:
        if not self.groups:
            raise ValueError("InClusterArgs.groups is empty: the components serve GPU node groups")
        names = [group.name for group in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"InClusterArgs.groups: node group names repeat ({', '.join(names)})")

    @property
    def minor(self) -> str:
        """The Kubernetes minor version (`1.35` of `1.35` or `1.35.2`)."""
        return ".".join(self.kubernetes_version.split(".")[:2])

