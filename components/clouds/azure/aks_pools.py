"""One AKS agent pool (mode User) per node group: its VM size, zones, autoscaler bounds, Spot priority, taints and
labels, MIG profile, and no AKS driver (the GPU Operator's driver container installs the lock's driver).

Sources (learn.microsoft.com/azure/aks; MicrosoftDocs/azure-aks-docs articles/aks/<page>.md @fb060ab):
- use-nvidia-gpu: `--gpu-driver none` (gpuProfile.driver None) at pool creation skips AKS's GPU driver install, and
  no update or upgrade changes it; "Taints and VM sizes can only be set for node pools during node pool creation".
- gpu-multi-instance: `gpuInstanceProfile` MIG1g..MIG7g ("You can't change the applied GPU instance profile after node
  pool creation"); its table for Standard_ND96asr_v4 (A100 40 GB) maps MIG1g to 1g.5gb, MIG2g to 2g.10gb, MIG3g to
  3g.20gb, MIG4g to 4g.20gb, MIG7g to 7g.40gb: each the smallest-memory profile of its slices.
- spot-node-pool: priority Spot, eviction Delete, max price -1 (never evicted for price) or a price; "You can't change
  ScaleSetPriority or SpotMaxPrice after creation"; a Spot pool has the label kubernetes.azure.com/scalesetpriority:
  spot and the taint kubernetes.azure.com/scalesetpriority=spot:NoSchedule.
- node-auto-drain: a Spot node's Preempt scheduled event makes AKS itself cordon and drain the node (default
  behaviour, no configuration; "best effort"), so no termination handler runs on AKS (the AWS one has no Azure mode).
- create-node-pools: a pool name starts with a lower-case letter, lower-case letters and digits only, at most 12
  characters for a Linux pool.
- use-tags: "Tags set on a node pool apply only to resources related to that node pool" (its scale set).

Scale from zero: AKS runs the cluster autoscaler, which builds a pool's template node from its scale set: the SKU's
GPUs as nvidia.com/gpu, the pool's labels and taints, and each scale-set tag
k8s.io_cluster-autoscaler_node-template_resources_<resource, `/` written `_`> as that resource's capacity
(kubernetes/autoscaler @55c37cd cluster-autoscaler/cloudprovider/azure/azure_util.go:89, azure_template.go:384-388,
:591-610). So each pool's tags name what its node advertises once checked: its GPUs as the device plugin shares them
(a MIG or time-sliced count differs from the SKU's) and, on InfiniBand pools, rdma/ib; a pod asking for them scales a
pool up from zero. The node check's gate is a label only the device plugin selects (no pool taint), so it keeps
nothing from the simulation. AKS exposes none of the autoscaler's startup-taint flags (Azure/AKS #3276).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import containerservice

from components.kubernetes.gpu_sharing import advertised_resources
from components.kubernetes.network_operator import HCA_MAX
from components.kubernetes.network_operator import RESOURCE as RDMA_RESOURCE
from components.kubernetes.pool_nodes import group_labels, group_taints, sharing_of
from gpufleet.catalog import load_mig_facts
from gpufleet.clouds.azure.names import AGENT_POOL, NAMES
from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup
from gpufleet.stackfile.scheduler_checks import aks_gpu_instance_profile

SPOT_KEY = "kubernetes.azure.com/scalesetpriority"
SPOT_TAINT = (SPOT_KEY, "spot", "NoSchedule")
NEVER_EVICTED_FOR_PRICE = -1
TEMPLATE_RESOURCE_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"
# A change to any of these makes a new pool (the sources above): Pulumi replaces it, and the plan says so.
POOL_CREATION_ONLY = ["vmSize", "gpuInstanceProfile", "gpuProfile", "scaleSetPriority", "scaleSetEvictionPolicy",
                      "spotMaxPrice", "nodeTaints", "availabilityZones", "vnetSubnetID", "osSKU",
                      "enableEncryptionAtHost", "osDiskSizeGB", "enableNodePublicIP"]


def pool_name(group_name: str) -> str:
    """The group's agent pool name: lower-case letters and digits, a letter first, cut to the Linux limit."""
    cleaned = re.sub(r"[^a-z0-9]", "", group_name.lower())
    if not cleaned or not cleaned[0].isalpha():
        cleaned = "g" + cleaned
    return cleaned[: NAMES.limit(AGENT_POOL, "agentPoolName")]


def pool_names(resolved: ResolvedCluster) -> dict[str, str]:
    """Group name -> pool name; two groups cut to one name, or to the system pool's, are refused naming the field."""
    from .aks import SYSTEM_POOL

    names: dict[str, str] = {}
    for group in resolved.groups:
        name = pool_name(group.spec.name)
        if name in names.values() or name == SYSTEM_POOL:
            raise ValueError(f"{group.path('name')}: its AKS pool name {name!r} (lower-case letters and digits, at "
                             "most 12) is another pool's; rename the group")
        names[group.spec.name] = name
    return names


def gpu_instance_profile(group: ResolvedGroup) -> str | None:
    """MIG<n>g for a group sharing by MIG; None without MIG. The stack checks refused a profile AKS cannot make
    (gpufleet/stackfile/scheduler_checks.py aks_gpu_instance_profile, the one mapping)."""
    sharing = group.spec.gpu_sharing
    if sharing.mode != "mig" or sharing.mig_profile is None or group.primary is None:
        return None
    facts = load_mig_facts().of(group.primary.gpu)
    return aks_gpu_instance_profile(facts.profiles, sharing.mig_profile) if facts else None


def pool_fabric(group: ResolvedGroup) -> str:
    """The fabric a pool's nodes are labelled with: InfiniBand where the group uses it."""
    return "infiniband" if group.rdma and group.fabric == "infiniband" else "none"


def pool_labels(group: ResolvedGroup) -> dict[str, str]:
    """The labels the pool's nodes carry from gpufleet and the stack (AKS adds its own, spot's among them)."""
    return group_labels(group, pool_fabric(group))


def pool_taints(group: ResolvedGroup) -> tuple[tuple[str, str, str], ...]:
    """The stack's taints and the GPU taint; no node-check taint: AKS forbids removing a pool's taint from a node, so
    the node check gates by a label instead (components/kubernetes/node_check.py)."""
    return group_taints(group, startup_taint=False)


def template_tags(group: ResolvedGroup) -> dict[str, str]:
    """The scale-set tags that give the autoscaler's template node what one checked node of the pool advertises."""
    resources = advertised_resources(sharing_of(group))
    if pool_fabric(group) == "infiniband":
        resources[RDMA_RESOURCE] = HCA_MAX
    return {TEMPLATE_RESOURCE_TAG + name.replace("/", "_"): str(count) for name, count in sorted(resources.items())}


@dataclass(frozen=True)
class PoolArgs:
    """What every pool shares."""

    cluster_name: pulumi.Input[str]
    resource_group_name: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    version: str
    root_volume_gb: int
    encryption_at_host: bool


def agent_pool(name: str, group: ResolvedGroup, pool: str, args: PoolArgs,
               opts: pulumi.ResourceOptions) -> containerservice.AgentPool:
    """The group's pool, autoscaled between its min and max."""
    spec = group.spec
    spot = spec.capacity == "spot"
    labels: Mapping[str, str] = pool_labels(group)
    return containerservice.AgentPool(
        f"{name}-{spec.name}",
        agent_pool_name=pool,
        resource_name_=args.cluster_name,
        resource_group_name=args.resource_group_name,
        mode="User",
        type="VirtualMachineScaleSets",
        vm_size=spec.instance_types[0],
        availability_zones=list(group.zones) or None,
        vnet_subnet_id=args.subnet_id,
        orchestrator_version=args.version,
        enable_auto_scaling=True,
        min_count=spec.size.min,
        max_count=spec.size.max,
        count=spec.size.desired,
        node_labels=dict(labels),
        node_taints=[f"{key}={value}:{effect}" for key, value, effect in pool_taints(group)],
        scale_set_priority="Spot" if spot else "Regular",
        scale_set_eviction_policy="Delete" if spot else None,
        spot_max_price=(spec.spot_max_price or NEVER_EVICTED_FOR_PRICE) if spot else None,
        gpu_profile=containerservice.GPUProfileArgs(driver="None"),
        gpu_instance_profile=gpu_instance_profile(group),
        os_type="Linux",
        os_sku="Ubuntu",
        os_disk_size_gb=args.root_volume_gb,
        enable_encryption_at_host=args.encryption_at_host,
        enable_node_public_ip=False,
        tags=template_tags(group),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            replace_on_changes=POOL_CREATION_ONLY,
            ignore_changes=["count"])),  # the autoscaler owns the count between min and max
    )
