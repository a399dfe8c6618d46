"""Per cloud, which inputs of a resource type a reviewer needs to see, as `terraform plan` shows them: exposure
(public addresses and endpoints), sizes (scaling bounds, instance types, disks, file systems) and prices (spot caps,
budgets). Data, not code per type: a path per input (`a.b`, `a[].b` for every item of a list; see model.values_at).
Openings (ingress) and grants need their documents read and live in ingress.py and grants.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..words import resource_name
from .model import Resource, ReviewLine, shown, values_at


@dataclass(frozen=True)
class Shown:
    """The `fields` (label, input path) of a resource type under one concern; `when` limits it to the resources
    where it says something (a subnet matters for exposure only when it hands out public addresses)."""

    concern: str
    fields: tuple[tuple[str, str], ...]
    when: Callable[[Mapping[str, Any]], bool] | None = None


def _public_ips_on_launch(inputs: Mapping[str, Any]) -> bool:
    return inputs.get("mapPublicIpOnLaunch") is True


def _bandwidth_out(inputs: Mapping[str, Any]) -> bool:
    # Alibaba gives an instance a public address when its outbound internet bandwidth is above 0.
    return any(isinstance(v, int | float) and v > 0 for v in values_at(inputs, "internetMaxBandwidthOut"))


_AWS_ROOT_DISKS = (("disk GB", "blockDeviceMappings[].ebs.volumeSize"),
                   ("disk type", "blockDeviceMappings[].ebs.volumeType"))
AWS: dict[str, tuple[Shown, ...]] = {
    "aws:autoscaling/group:Group": (
        Shown("sizes", (("min", "minSize"), ("desired", "desiredCapacity"), ("max", "maxSize"),
                        ("types", "mixedInstancesPolicy.launchTemplate.overrides[].instanceType"),
                        ("on-demand base", "mixedInstancesPolicy.instancesDistribution.onDemandBaseCapacity"),
                        ("on-demand above base %",
                         "mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity"))),
        Shown("prices", (("spot max price", "mixedInstancesPolicy.instancesDistribution.spotMaxPrice"),)),
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        Shown("sizes", (("type", "instanceType"), *_AWS_ROOT_DISKS,
                        ("interfaces", "networkInterfaces[].interfaceType"))),
        Shown("exposure", (("public IP", "networkInterfaces[].associatePublicIpAddress"),),
              lambda inputs: True in values_at(inputs, "networkInterfaces[].associatePublicIpAddress")),
    ),
    # A lone machine: a Slurm cluster's head node (its name says so: <cluster>-<environment>-slurm-head).
    "aws:ec2/instance:Instance": (
        Shown("sizes", (("type", "instanceType"), ("zone", "availabilityZone"),
                        ("disk GB", "rootBlockDevice.volumeSize"), ("disk type", "rootBlockDevice.volumeType"))),
        Shown("exposure", (("public IP", "associatePublicIpAddress"),),
              lambda inputs: inputs.get("associatePublicIpAddress") is True),
    ),
    "aws:ec2/placementGroup:PlacementGroup": (Shown("sizes", (("strategy", "strategy"),)),),
    "aws:ec2/subnet:Subnet": (
        Shown("exposure", (("public IPs on launch", "mapPublicIpOnLaunch"), ("range", "cidrBlock")),
              _public_ips_on_launch),
    ),
    "aws:ec2/eip:Eip": (Shown("exposure", (("public IP, domain", "domain"),)),),
    "aws:eks/cluster:Cluster": (
        Shown("exposure", (("public endpoint", "vpcConfig.endpointPublicAccess"),
                           ("private endpoint", "vpcConfig.endpointPrivateAccess"),
                           ("public ranges", "vpcConfig.publicAccessCidrs[]"))),
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        Shown("sizes", (("GB", "storageCapacity"), ("MB/s per TiB", "perUnitStorageThroughput"),
                        ("deployment", "deploymentType"))),
    ),
    "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration": (
        Shown("sizes", (("build types", "instanceTypes[]"),)),
    ),
    "aws:budgets/budget:Budget": (
        Shown("prices", (("limit", "limitAmount"), ("unit", "limitUnit"), ("per", "timeUnit"))),
    ),
}

_VMSS = "virtualMachineProfile"
AZURE: dict[str, tuple[Shown, ...]] = {
    "azure-native:compute:VirtualMachineScaleSet": (
        Shown("sizes", (("type", "sku.name"), ("capacity", "sku.capacity"), ("priority", f"{_VMSS}.priority"),
                        ("OS disk GB", f"{_VMSS}.storageProfile.osDisk.diskSizeGB"),
                        ("single placement group", "singlePlacementGroup"), ("zones", "zones[]"))),
        Shown("prices", (("spot max price", f"{_VMSS}.billingProfile.maxPrice"),)),
        Shown("exposure", (("public IP", f"{_VMSS}.networkProfile.networkInterfaceConfigurations[].ipConfigurations[]"
                                         ".publicIPAddressConfiguration.name"),)),
    ),
    # A lone VM: a Slurm cluster's head node (<cluster>-<environment>-slurm-head); its address is its NIC's.
    "azure-native:compute:VirtualMachine": (
        Shown("sizes", (("type", "hardwareProfile.vmSize"), ("zones", "zones[]"),
                        ("OS disk GB", "storageProfile.osDisk.diskSizeGB"))),
    ),
    "azure-native:network:NetworkInterface": (
        Shown("exposure", (("public IP", "ipConfigurations[].publicIPAddress.id"),),
              lambda inputs: bool(values_at(inputs, "ipConfigurations[].publicIPAddress"))),
    ),
    "azure-native:monitor:AutoscaleSetting": (
        Shown("sizes", (("min", "profiles[].capacity.minimum"), ("default", "profiles[].capacity.default"),
                        ("max", "profiles[].capacity.maximum"))),
    ),
    "azure-native:containerservice:AgentPool": (
        Shown("sizes", (("type", "vmSize"), ("min", "minCount"), ("count", "count"), ("max", "maxCount"),
                        ("OS disk GB", "osDiskSizeGB"), ("priority", "scaleSetPriority"),
                        ("MIG", "gpuInstanceProfile"))),
        Shown("prices", (("spot max price", "spotMaxPrice"),)),
        Shown("exposure", (("node public IPs", "enableNodePublicIP"),)),
    ),
    "azure-native:containerservice:ManagedCluster": (
        Shown("exposure", (("private API server", "apiServerAccessProfile.enablePrivateCluster"),
                           ("API server ranges", "apiServerAccessProfile.authorizedIPRanges[]"),
                           ("node public IPs", "agentPoolProfiles[].enableNodePublicIP"))),
        Shown("sizes", (("system pool", "agentPoolProfiles[].vmSize"), ("count", "agentPoolProfiles[].count"),
                        ("min", "agentPoolProfiles[].minCount"), ("max", "agentPoolProfiles[].maxCount"))),
    ),
    "azure-native:network:PublicIPAddress": (
        Shown("exposure", (("public IP, SKU", "sku.name"), ("allocation", "publicIPAllocationMethod"))),
    ),
    "azure-native:storagecache:AmlFilesystem": (
        Shown("sizes", (("TiB", "storageCapacityTiB"), ("SKU", "sku.name"))),
    ),
    "azure-native:virtualmachineimages:VirtualMachineImageTemplate": (
        Shown("sizes", (("build type", "vmProfile.vmSize"), ("build disk GB", "vmProfile.osDiskSizeGB"))),
    ),
    "azure-native:consumption:Budget": (Shown("prices", (("amount", "amount"), ("per", "timeGrain"))),),
}

ALICLOUD: dict[str, tuple[Shown, ...]] = {
    "alicloud:ess/scalingGroup:ScalingGroup": (
        Shown("sizes", (("min", "minSize"), ("desired", "desiredCapacity"), ("max", "maxSize"),
                        ("types", "launchTemplateOverrides[].instanceType"), ("on-demand base", "onDemandBaseCapacity"),
                        ("on-demand above base %", "onDemandPercentageAboveBaseCapacity"))),
    ),
    "alicloud:ess/scalingConfiguration:ScalingConfiguration": (
        Shown("sizes", (("types", "instanceTypes[]"), ("system disk GB", "systemDiskSize"), ("spot", "spotStrategy"))),
        Shown("exposure", (("outbound internet Mbit/s (a public IP)", "internetMaxBandwidthOut"),), _bandwidth_out),
    ),
    "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate": (
        Shown("sizes", (("type", "instanceType"), ("system disk GB", "systemDisk.size"), ("spot", "spotStrategy"))),
        Shown("exposure", (("outbound internet Mbit/s (a public IP)", "internetMaxBandwidthOut"),), _bandwidth_out),
    ),
    "alicloud:cs/nodePool:NodePool": (
        Shown("sizes", (("types", "instanceTypes[]"), ("min", "scalingConfig.minSize"), ("desired", "desiredSize"),
                        ("max", "scalingConfig.maxSize"), ("system disk GB", "systemDiskSize"),
                        ("on-demand base", "onDemandBaseCapacity"), ("spot", "spotStrategy"))),
        Shown("exposure", (("outbound internet Mbit/s (a public IP)", "internetMaxBandwidthOut"),
                           ("EIP per node", "scalingConfig.isBondEip")),
              lambda inputs: _bandwidth_out(inputs) or values_at(inputs, "scalingConfig.isBondEip") == [True]),
    ),
    "alicloud:cs/managedKubernetes:ManagedKubernetes": (
        Shown("exposure", (("API server on an internet SLB", "slbInternetEnabled"),)),
    ),
    "alicloud:ecs/eipAddress:EipAddress": (
        Shown("exposure", (("public IP, Mbit/s", "bandwidth"), ("charged", "internetChargeType"))),
    ),
    "alicloud:ecs/ecsImagePipeline:EcsImagePipeline": (
        Shown("sizes", (("build type", "instanceType"), ("system disk GB", "systemDiskSize"))),
        Shown("exposure", (("outbound internet Mbit/s (a public IP)", "internetMaxBandwidthOut"),), _bandwidth_out),
    ),
}

BY_TYPE: dict[str, tuple[Shown, ...]] = {**AWS, **AZURE, **ALICLOUD}


def input_lines(resources: Sequence[Resource]) -> list[ReviewLine]:
    """A line per resource and concern of the table above, its fields that have a value."""
    lines = []
    for resource in resources:
        inputs = resource.get("inputs") or {}
        for entry in BY_TYPE.get(resource["type"], ()):
            if entry.when is not None and not entry.when(inputs):
                continue
            parts = [f"{label} {shown(found)}" for label, path in entry.fields
                     if (found := [v for v in values_at(inputs, path) if v != ""])]
            if parts:
                lines.append(ReviewLine(entry.concern, resource["urn"], resource_name(resource["urn"]),
                                        ", ".join(parts)))
    return lines
