"""A Slurm head node on Azure for the Azure Slurm rule tests: the VM with the custom data the program renders for the
shipped ND H100 stack turned slurm (components/clouds/azure/slurm_head.py), its NIC and the NIC's security group."""

from __future__ import annotations

from typing import Any

from slurm_stacks import slurm_cluster
from stack_rule_args import res

from components.clouds.azure.slurm_head import head_custom_data
from gpufleet.plan.record import RecordedResource
from gpufleet.resolve import resolve_cluster

VM = "azure-native:compute:VirtualMachine"
NIC = "azure-native:network:NetworkInterface"
NSG = "azure-native:network:NetworkSecurityGroup"
VAULT = "train-disk-5918b771"
NODES_ASG = ("/subscriptions/00000000-0000-4000-8000-000000000000/resourceGroups/rg/providers/"
             "Microsoft.Network/applicationSecurityGroups/train-dev-slurm-nodes")


def head_vm(nic: RecordedResource | None = None, custom_data: str | None = None, **tags: str) -> RecordedResource:
    """The head VM, its custom data as rendered (or `custom_data`), on `nic`."""
    data = custom_data if custom_data is not None else head_custom_data(
        resolve_cluster(slurm_cluster("azure-train-ndh100")), VAULT)
    deps = {"networkProfile": (nic.urn,)} if nic else None
    return res(VM, "train-dev-slurm-head", {"osProfile": {"customData": data},
                                            "tags": {"gpufleet:role": "slurm-head", **tags}},
               depends_on=(nic.urn,) if nic else (), property_dependencies=deps)


def slurmctld_rule(**changes: Any) -> dict[str, Any]:
    """The program's slurmctld rule (from the nodes' application security group), with `changes`."""
    return {"name": "slurmctld-from-nodes", "priority": 90, "direction": "Inbound", "access": "Allow",
            "protocol": "Tcp", "sourcePortRange": "*", "destinationPortRange": "6817", "destinationAddressPrefix": "*",
            "sourceApplicationSecurityGroups": [{"id": NODES_ASG}], **changes}


def head_network(*rules: dict[str, Any]) -> list[RecordedResource]:
    """The head NIC's security group with `rules`, the NIC, and the head VM on it."""
    nsg = res(NSG, "train-dev-slurm-head", {"securityRules": list(rules)})
    nic = res(NIC, "train-dev-slurm-head", {"networkSecurityGroup": {"id": "nsg"}}, depends_on=(nsg.urn,),
              property_dependencies={"networkSecurityGroup": (nsg.urn,)})
    return [nsg, nic, head_vm(nic)]
