"""Build the in-cluster component under the offline engine and read back the Kubernetes objects it registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import InCluster, InClusterArgs, InClusterGroup
from gpufleet.plan.engine import run_program
from gpufleet.plan.kubernetes_answers import is_kubernetes
from gpufleet.plan.record import RecordedResource

EFA = InClusterGroup(
    name="h100", fabric="efa", instance_types=("p5.48xlarge",), gpus_per_node=8, min_size=2, max_size=16,
    scaling_group_name="train-h100", labels={"gpufleet.io/group": "h100"},
    taints=(("nvidia.com/gpu", "present", "NoSchedule"), ("dedicated", "training", "NoExecute")),
)
SHARED = InClusterGroup(
    name="l40s", fabric="none", instance_types=("g6e.12xlarge", "g6e.24xlarge"), gpus_per_node=4, min_size=0,
    max_size=4, scaling_group_name="train-l40s", labels={"gpufleet.io/group": "l40s"},
    taints=(("nvidia.com/gpu", "present", "NoSchedule"),), sharing_mode="time-slicing", time_slicing_replicas=4,
)
# Same instance type as EFA, no EFA: the EFA plugin must stay off its nodes.
PLAIN_P5 = InClusterGroup(
    name="p5-plain", fabric="none", instance_types=("p5.48xlarge",), gpus_per_node=8, min_size=0, max_size=2,
    scaling_group_name="train-p5-plain", labels={"gpufleet.io/group": "p5-plain"},
)
IB = InClusterGroup(
    name="nd-h100", fabric="infiniband", instance_types=("Standard_ND96isr_H100_v5",), gpus_per_node=8,
    min_size=0, max_size=8, scaling_group_name="train-nd-h100",
)
# An AKS MIG pool on Spot: AKS labels and taints Spot nodes kubernetes.azure.com/scalesetpriority=spot.
MIG_SPOT = InClusterGroup(
    name="nc-a100", fabric="none", instance_types=("Standard_NC24ads_A100_v4",), gpus_per_node=1, min_size=0,
    max_size=4, scaling_group_name="ncA100", labels={"gpufleet.io/group": "nc-a100"},
    taints=(("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),), sharing_mode="mig",
    mig_profile="all-1g.10gb", spot=True,
)
# What the cloud side passes as InClusterArgs.node_check on AKS: per group, the expect.json document
# (components.bootstrap.cloud_init.expect_document).
LOCK_PART = {"profile": "cuda12.8-r580", "driver": "580.126.16", "cuda": "12.8", "fabric_manager": "580.126.16",
             "scratch_mount": None}
EXPECTATIONS = {
    IB.name: {**LOCK_PART, "instance_types": {"Standard_ND96isr_H100_v5": {
        "gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nvswitch": True, "fabric": "infiniband",
        "fabric_interfaces": 8}}},
    MIG_SPOT.name: {**LOCK_PART, "instance_types": {"Standard_NC24ads_A100_v4": {
        "gpu_model": "A100", "gpu_count": 1, "nvswitch": False, "fabric": "none", "fabric_interfaces": 0,
        "mig_devices": 7}}},
}


# ACK groups: an eRDMA training pool and a cGPU (memory-isolated) pool; the labels are the pools' own.
ERDMA = InClusterGroup(
    name="gn8v", fabric="erdma", instance_types=("ecs.ebmgn8v.48xlarge",), gpus_per_node=8, min_size=0,
    max_size=4, scaling_group_name="train-gn8v", labels={"gpufleet.io/group": "gn8v"},
)
CGPU = InClusterGroup(
    name="gn7i", fabric="none", instance_types=("ecs.gn7i-c8g1.2xlarge",), gpus_per_node=1, min_size=1,
    max_size=4, scaling_group_name="infer-gn7i", labels={"gpufleet.io/group": "gn7i"},
    sharing_mode="memory-isolated", spot=True,
)
ACK_EXPECTATIONS = {
    ERDMA.name: {**LOCK_PART, "instance_types": {"ecs.ebmgn8v.48xlarge": {
        "gpu_model": "H20", "gpu_count": 8, "nvswitch": True, "fabric": "erdma", "fabric_interfaces": 2}}},
    CGPU.name: {**LOCK_PART, "instance_types": {"ecs.gn7i-c8g1.2xlarge": {
        "gpu_model": "A10", "gpu_count": 1, "nvswitch": False, "fabric": "none", "fabric_interfaces": 0}}},
}


@dataclass
class Registered:
    """What one build registered: every resource, and the Kubernetes objects among them."""

    resources: list[RecordedResource]

    @property
    def kubernetes(self) -> list[RecordedResource]:
        return [r for r in self.resources if is_kubernetes(r.type)]

    def objects(self) -> list[dict[str, Any]]:
        """Each Kubernetes resource's inputs: the object as the provider sends it to the API server."""
        return [r.inputs for r in self.kubernetes]

    def one(self, kind: str, name: str) -> RecordedResource:
        (found,) = [r for r in self.kubernetes if r.inputs["kind"] == kind and r.inputs["metadata"]["name"] == name]
        return found

    def urn_of(self, kind: str, name: str) -> str:
        return self.one(kind, name).urn


def build(groups: tuple[InClusterGroup, ...] = (EFA, SHARED), *, cloud: str = "aws", version: str = "1.35",
          region: str = "us-east-1", driver: str | None = None) -> Registered:
    """InCluster with a kubernetes Provider in its options, as the cloud side builds it."""

    def program() -> None:
        provider = k8s.Provider("kube", kubeconfig="{}")
        azure = cloud == "azure"
        expectations = {"azure": EXPECTATIONS, "alicloud": ACK_EXPECTATIONS}.get(cloud)
        args = InClusterArgs(cloud=cloud, cluster_name="train", kubernetes_version=version, region=region,
                             groups=groups, driver=driver or ("580.126.16" if azure else None),
                             node_check=expectations)
        InCluster("train", args, pulumi.ResourceOptions(provider=provider))

    return Registered(run_program(program, {}, project="gpufleet", stack="test", region=region, zones=[]))
