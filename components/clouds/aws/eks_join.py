"""What a node needs to join an EKS cluster: the control plane's name, endpoint and certificate, and the service
range its kubelet resolves cluster DNS in. The control plane (eks.py) makes it; the node groups render it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi


@dataclass(frozen=True)
class EksJoin:
    """The EKS cluster a node group's nodes join."""

    cluster_name: pulumi.Output[str]
    """aws.eks.Cluster name."""
    endpoint: pulumi.Output[str]
    """The API server URL (aws.eks.Cluster.endpoint)."""
    certificate_authority: pulumi.Output[str]
    """The cluster CA, base64 PEM (aws.eks.Cluster.certificate_authority.data)."""
    service_cidr: pulumi.Output[str]
    """The Kubernetes service range (kubernetes_network_config.service_ipv4_cidr): cluster DNS lives in it."""
