"""ERIs (elastic RDMA interfaces) of a node: the single source for the scaling configuration's interfaces and
the vSwitch sizing check.

An ERI is an elastic network interface with NetworkInterfaceTrafficMode HighPerformance; it shares its ENI's
vSwitch address and security group rules (ECS user guide, elastic-rdma-network-interface-card-eri). The
count per type is the catalog's fabric.interfaces (DescribeInstanceTypes.EriQuantity where published).
"""

from __future__ import annotations

from gpufleet.catalog import InstanceType

STANDARD = "Standard"
HIGH_PERFORMANCE = "HighPerformance"
# With jumbo frames on, NCCL's LL128 protocol needs MTU 8500 on eRDMA; without them 1400. A wrong MTU corrupts
# data (ECS user guide, on-the-gpu-instance-configuration-erdma).
ERDMA_MTU = 8500


def eri_count(instance: InstanceType, rdma: bool) -> int:
    """ERIs a node of this type takes: the catalog's count on an eRDMA type with RDMA in use, else 0."""
    return instance.fabric.interfaces if rdma and instance.fabric.kind == "erdma" else 0


def addresses_per_node(instance: InstanceType, rdma: bool) -> int:
    """The primary ENI plus one address per ERI, all from the node's vSwitch."""
    return 1 + eri_count(instance, rdma)
