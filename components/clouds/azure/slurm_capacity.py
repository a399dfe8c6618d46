"""The Azure side of Slurm's power programs (components/slurm/power.py): a node group's VM scale set, through the
official Compute client (azure-mgmt-compute): Virtual Machine Scale Sets - Get (sku.capacity), Update (a PATCH of
sku.capacity, the count the scale set keeps; the group's autoscale setting only bounds it, nodegroup.py) and
Delete Instances (the named VMs; the scale set's capacity drops by as many).

A node's name ends in its VM's scale set instance id, what Delete Instances takes: the number of a Uniform scale
set's VM, and the VM's name in a Flexible one (kubernetes/autoscaler 55c37cd5
cluster-autoscaler/cloudprovider/azure/azure_scale_set.go:776 passes the last segment of the VM's resource id,
and :1081-1092 builds a Flexible set's from the VM resource ids, .../virtualMachines/<name>).

The head node reads its subscription and resource group from the instance metadata service and signs with its
managed identity: the head node lives in the cluster's resource group.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any

# Azure Instance Metadata Service, compute section (learn.microsoft.com/azure/virtual-machines/
# instance-metadata-service: header Metadata: true, api-version 2021-02-01; subscriptionId, resourceGroupName).
INSTANCE_METADATA = "http://169.254.169.254/metadata/instance/compute?api-version=2021-02-01"


class ScaleSetCapacity:
    """GroupCapacity over the VM scale sets of one resource group."""

    def __init__(self, client: Any, resource_group: str) -> None:
        self.client = client
        """An azure.mgmt.compute ComputeManagementClient of the cluster's subscription."""
        self.resource_group = resource_group

    def desired(self, scaling_group: str) -> int:
        return int(self.client.virtual_machine_scale_sets.get(self.resource_group, scaling_group).sku.capacity)

    def set_desired(self, scaling_group: str, desired: int) -> None:
        from azure.mgmt.compute.models import Sku, VirtualMachineScaleSetUpdate

        current = self.client.virtual_machine_scale_sets.get(self.resource_group, scaling_group).sku
        update = VirtualMachineScaleSetUpdate(sku=Sku(name=current.name, tier=current.tier, capacity=desired))
        self.client.virtual_machine_scale_sets.begin_update(self.resource_group, scaling_group, update).result()

    def give_back(self, scaling_group: str, instance_ids: Sequence[str], lower_desired: bool) -> None:
        from azure.mgmt.compute.models import VirtualMachineScaleSetVMInstanceRequiredIDs

        before = self.desired(scaling_group)
        named = VirtualMachineScaleSetVMInstanceRequiredIDs(instance_ids=list(instance_ids))
        self.client.virtual_machine_scale_sets.begin_delete_instances(self.resource_group, scaling_group,
                                                                      named).result()
        if not lower_desired:
            # Deleting lowered the capacity: ask for as many fresh VMs again.
            self.set_desired(scaling_group, before)


def capacity_in(region: str) -> ScaleSetCapacity:
    """The scale sets of the head node's own subscription and resource group (`region` is the head node's)."""
    from azure.identity import ManagedIdentityCredential
    from azure.mgmt.compute import ComputeManagementClient

    request = urllib.request.Request(INSTANCE_METADATA, headers={"Metadata": "true"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        compute = json.load(answer)
    client = ComputeManagementClient(ManagedIdentityCredential(), compute["subscriptionId"])
    return ScaleSetCapacity(client, compute["resourceGroupName"])
