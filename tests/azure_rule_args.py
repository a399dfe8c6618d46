"""Azure resources for the Azure rule tests: a scale set as the engine receives it, and the shared runners
(`validate` runs one resource rule through the SDK's own ResourceValidationArgs; `res`/`messages` run stack
rules over recorded resources)."""

from __future__ import annotations

import copy
from typing import Any

from aws_rule_args import validate
from stack_rule_args import messages, res

__all__ = ["DES", "GALLERY_VERSION", "IB_SIZE", "VMSS", "messages", "res", "scale_set", "validate"]

VMSS = "azure-native:compute:VirtualMachineScaleSet"
SUB = "/subscriptions/00000000-0000-4000-8000-000000000000"
DES = f"{SUB}/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des"
GALLERY_VERSION = f"{SUB}/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/i/versions/1.0.1"
IB_SIZE = "Standard_ND96isr_H100_v5"

_SCALE_SET: dict[str, Any] = {
    "sku": {"name": IB_SIZE, "capacity": 2},
    "orchestrationMode": "Uniform",
    "singlePlacementGroup": True,
    "virtualMachineProfile": {
        "priority": "Regular",
        "securityProfile": {"encryptionAtHost": True},
        "storageProfile": {
            "imageReference": {"id": GALLERY_VERSION},
            "osDisk": {"createOption": "FromImage", "managedDisk": {"diskEncryptionSet": {"id": DES}}},
            "dataDisks": [{"lun": 0, "createOption": "Empty", "managedDisk": {"diskEncryptionSet": {"id": DES}}}],
        },
        "networkProfile": {
            "networkInterfaceConfigurations": [
                {"name": "nic", "primary": True, "ipConfigurations": [{"name": "ip", "subnet": {"id": "s"}}]}
            ]
        },
    },
}


def scale_set(**changes: Any) -> dict[str, Any]:
    """A compliant scale set with `changes` applied at dotted paths (virtualMachineProfile.priority=...)."""
    props = copy.deepcopy(_SCALE_SET)
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = props
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return props
