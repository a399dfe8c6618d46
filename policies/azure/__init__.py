"""Azure's part of the pack: no rules yet, and the reader the common rules need (a scale set's VM size).

A scale set's size at max comes with the Azure rules (its autoscale setting is a separate resource).
"""

from ..cloud import CloudPolicies, Readers, single_string

VIRTUAL_MACHINE_SCALE_SET = "azure-native:compute:VirtualMachineScaleSet"

POLICIES = CloudPolicies(
    cloud="azure",
    rules=(),
    readers=Readers(types={VIRTUAL_MACHINE_SCALE_SET: lambda node: single_string(node, "sku", "name")}),
)
