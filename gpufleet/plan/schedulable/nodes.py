"""The nodes each node group makes, as the scheduler will see them, from what the plan registers for the group.

Labels and taints are the registered ones: on EKS the kubelet's --node-labels and --register-with-taints in the
launch template's user data (components/bootstrap/eks_join.py writes them to /etc/gpufleet/eks.env) or a managed node
group's labels and taints; on AKS an agent pool's nodeLabels and nodeTaints; on ACK a node pool's labels and taints.
To them each node adds what its platform sets (Kubernetes "Well-Known Labels, Annotations and Taints":
kubernetes.io/os, node.kubernetes.io/instance-type; per cloud in pools.py).

Allocatable: cpu and memory are the instance type's vCPUs and memory from the catalog: an upper bound (the kubelet
reserves part), so a pod found too big is too big, and a type the catalog lacks (a CPU system type) is not judged.
GPUs as the device plugin shares them (components/kubernetes/gpu_sharing.py advertised_resources); on EKS the ASG's
cluster-autoscaler node-template resource tags, the same figures with EFA devices and huge pages; on AKS rdma/ib as
the Network Operator's shared device plugin advertises it (components/kubernetes/network_operator.py HCA_MAX); on
ACK aliyun/erdma where the eRDMA controller is installed, its count not known offline (not judged).

A node is judged as it is once it passed its check: the check's startup taint (components/kubernetes/node_check.py
NODE_CHECK_TAINT) lifted where a pool carries it (EKS, ACK; AKS pools carry none: the pool API owns their taints,
azure-aks-docs articles/aks/use-node-taints.md, Azure/AKS #2934), and on AKS and ACK GPU nodes the label it sets
(NODE_CHECK_LABEL, which the device plugin selects; pools.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from components.kubernetes.gpu_sharing import GroupSharing, advertised_resources
from components.kubernetes.node_check import NODE_CHECK_TAINT

from ...clouds.backend import ResolvedCluster, ResolvedGroup
from .quantities import quantity
from .semantics import NodeTemplate, Taint

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
OS_LABEL = "kubernetes.io/os"
LIFTED_TAINTS = {
    "aws": frozenset({Taint(*NODE_CHECK_TAINT)}),
    "alicloud": frozenset({Taint(*NODE_CHECK_TAINT)}),
    "azure": frozenset(),
}
"""Taints the stack lifts from a node once it passes its check, per cloud (none on AKS: the pool owns its taints)."""


def catalog_allocatable(resolved: ResolvedCluster, instance_type: str) -> dict[str, Fraction | None]:
    """cpu and memory of the type, from the catalog (capacity: an upper bound of allocatable); empty when unknown."""
    row = resolved.catalog.get(resolved.spec.cloud, instance_type)
    found: dict[str, Fraction | None] = {}
    if row is not None and row.vcpu is not None:
        found["cpu"] = Fraction(row.vcpu)
    if row is not None and row.memory_gib is not None:
        found["memory"] = Fraction(row.memory_gib) * 2**30
    return found


def gpu_allocatable(group: ResolvedGroup | None) -> dict[str, Fraction | None]:
    """The GPU resources one node of a gpufleet group advertises; empty for a group the stack file does not name."""
    if group is None or group.primary is None:
        return {}
    sharing = group.spec.gpu_sharing
    shared = GroupSharing(group.name, tuple(group.spec.instance_types), group.primary.gpu.count, sharing.mode,
                          sharing.mig_profile, sharing.replicas)
    return {name: Fraction(count) for name, count in advertised_resources(shared).items()}


def parsed_resources(amounts: Mapping[str, str]) -> dict[str, Fraction | None]:
    return {name: quantity(amount) for name, amount in amounts.items()}


def templates(cloud: str, group: str, instance_types: Sequence[str], labels: Mapping[str, str],
              taints: Sequence[Taint], allocatable: Mapping[str, Fraction | None],
              resolved: ResolvedCluster, variants: Mapping[str, Mapping[str, str]] | None = None) -> list[NodeTemplate]:
    """One template per instance type (and per variant: e.g. spot and on-demand nodes label themselves apart), with
    the platform's labels and the catalog's size, the taints the stack lifts left out."""
    kept = tuple(taint for taint in taints if taint not in LIFTED_TAINTS[cloud])
    made = []
    for instance_type in instance_types:
        size = {**catalog_allocatable(resolved, instance_type), **allocatable}
        typed = {INSTANCE_TYPE_LABEL: instance_type} if instance_type else {}  # "": the type is not in the plan
        base = {OS_LABEL: "linux", **typed, **labels}
        for variant, extra in (variants or {"": {}}).items():
            name = ", ".join(part for part in (instance_type if len(instance_types) > 1 else "", variant) if part)
            made.append(NodeTemplate(group, {**base, **extra}, kept, size, name))
    return made
