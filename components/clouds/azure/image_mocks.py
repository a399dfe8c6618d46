"""What the offline engine answers in place of Azure for the image pipeline's resources: ARM ids in the
shape Azure returns (/subscriptions/S/resourceGroups/RG/providers/NAMESPACE/TYPE/NAME), names, and the
identity's principal id. Values derive from the resource's type and name, so two plans are identical.

`new_resource` answers the types the image stack registers and returns None for any other, so the Azure
cluster mocks (mocks.py) can consult it first and answer the rest.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

SUBSCRIPTION = "00000000-0000-4000-8000-000000000000"  # the offline engine's stand-in subscription
TENANT = "00000000-0000-4000-8000-0000000000aa"  # and tenant

Outputs = tuple[str, dict[str, Any]]

# Resource type -> (input that names it, ARM provider namespace and type path under the resource group).
ARM_RESOURCES: dict[str, tuple[str, str]] = {
    "azure-native:compute:Gallery": ("galleryName", "Microsoft.Compute/galleries"),
    "azure-native:managedidentity:UserAssignedIdentity": (
        "resourceName", "Microsoft.ManagedIdentity/userAssignedIdentities"
    ),
    "azure-native:virtualmachineimages:VirtualMachineImageTemplate": (
        "imageTemplateName", "Microsoft.VirtualMachineImages/imageTemplates"
    ),
}
RESOURCE_GROUP = "azure-native:resources:ResourceGroup"
GALLERY_IMAGE = "azure-native:compute:GalleryImage"
ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def _uuid(seed: str) -> str:
    return str(uuid.UUID(_hex(seed, 32), version=4))


def _autoname(name: str, seed: str) -> str:
    """The name azure-native's autonaming would give: the logical name and a random suffix."""
    return f"{name}{_hex(seed, 8)}"


def group_id(group: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}"


def new_resource(typ: str, name: str, inputs: dict[str, Any], region: str) -> Outputs | None:
    """The id and computed outputs Azure returns for an image-pipeline resource; None for other types."""
    seed = f"{typ}::{name}"
    location = inputs.get("location") or region
    if typ == RESOURCE_GROUP:
        group = inputs.get("resourceGroupName") or _autoname(name, seed)
        return group_id(group), {"name": group, "location": location}
    if typ in ARM_RESOURCES:
        key, path = ARM_RESOURCES[typ]
        own = inputs.get(key) or _autoname(name, seed)
        arm_id = f"{group_id(inputs['resourceGroupName'])}/providers/{path}/{own}"
        outputs: dict[str, Any] = {"name": own, "location": location}
        if typ.endswith(":UserAssignedIdentity"):
            outputs |= {"principalId": _uuid(f"{seed}:principal"), "clientId": _uuid(f"{seed}:client"),
                        "tenantId": TENANT}
        if typ.endswith(":VirtualMachineImageTemplate"):
            # The template's identity comes back keyed by identity id (the input is a list of ids); no run
            # has happened offline, so lastRunStatus stays unset.
            identity = inputs.get("identity") or {}
            listed = identity.get("userAssignedIdentities") or []
            outputs["identity"] = {**identity, "userAssignedIdentities": {i: {} for i in listed}}
        return arm_id, outputs
    if typ == GALLERY_IMAGE:
        own = inputs.get("galleryImageName") or _autoname(name, seed)
        group = group_id(inputs["resourceGroupName"])
        return f"{group}/providers/Microsoft.Compute/galleries/{inputs['galleryName']}/images/{own}", {
            "name": own, "location": location,
        }
    if typ == ROLE_DEFINITION:
        # Custom role ids live under the subscription whatever scope defines them (as role assignments cite them).
        own = inputs.get("roleDefinitionId") or _uuid(seed)
        return f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{own}", {"name": own}
    if typ == ROLE_ASSIGNMENT:
        own = inputs.get("roleAssignmentName") or _uuid(seed)
        return f"{inputs['scope']}/providers/Microsoft.Authorization/roleAssignments/{own}", {"name": own}
    return None
