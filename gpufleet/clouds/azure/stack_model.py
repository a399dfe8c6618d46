"""The Azure stack-file settings: resource group, network, identity and storage a user may create or bring; the
image stack's build VM size."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from ...stackfile.models import ClusterSpec, ImagesSpec, Network, Storage
from ...yaml_model import StrictModel

# The largest scale set an InfiniBand group may be (catalog limit ib_scale_set_max_vms): a whole training group
# scaling out at once is the most VMs one image version must serve concurrently in a region.
LARGEST_IB_SCALE_SET = 100

# ARM ids as Azure writes them; checked by shape only, existence is Azure's to say at deploy time.
RESOURCE_GROUP_ID = r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-A-Za-z0-9_.()]{1,90}"
CONTAINER_ID = (
    RESOURCE_GROUP_ID + r"/providers/Microsoft\.Storage/storageAccounts/[a-z0-9]{3,24}/blobServices/default"
    r"/containers/[a-z0-9-]{3,63}$"
)
RESOURCE_ID = RESOURCE_GROUP_ID + r"/providers/[A-Za-z0-9.]+/[-A-Za-z0-9_./]+$"
IDENTITY_ID = RESOURCE_GROUP_ID + r"/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/[-A-Za-z0-9_]{3,128}$"
VAULT_ID = RESOURCE_GROUP_ID + r"/providers/Microsoft\.KeyVault/vaults/[-a-zA-Z0-9]{3,24}$"
# A Key Vault key identifier with its version: the Disk Encryption Set starts from that version.
KEY_URL = r"^https://[-a-zA-Z0-9]{3,24}\.vault\.azure\.net/keys/[-a-zA-Z0-9]{1,127}/[0-9a-f]{32}$"


class AzureNetworkSettings(Network):
    """Create a VNet from `cidr`, or bring one with vnet_id and subnet_id."""

    BRING = ("vnet_id", "subnet_id")

    zones: list[Literal["1", "2", "3"]] = Field(  # type: ignore[assignment]
        default_factory=list,
        description="availability zones (1, 2, 3); empty = a regional scale set, the usual ND deployment. "
        "An InfiniBand group uses one",
    )
    vnet_id: str | None = Field(None, description="bring: existing VNet resource id")
    subnet_id: str | None = Field(
        None,
        description="bring: existing node subnet resource id; it needs egress (NAT gateway) and no public IPs",
    )
    resource_group: str | None = Field(
        None,
        pattern=r"^[-A-Za-z0-9_.()]{1,90}$",
        description="bring: an existing resource group name for the cluster; unset: gpufleet creates one",
    )


class AzureStorageSettings(Storage):
    """Disks under a customer-managed key: Key Vault key (created, or brought with its vault) and a DES."""

    kms_key: str = Field(
        "create",
        pattern=rf"^create$|{KEY_URL}",
        description="create | a Key Vault key id with its version (https://VAULT.vault.azure.net/keys/NAME/VERSION)",
    )
    key_vault_id: str | None = Field(
        None, pattern=VAULT_ID, description="bring: the resource id of the vault holding kms_key (with kms_key)"
    )
    encryption_at_host: bool = Field(
        True,
        description="encrypt temp disks and caches on the host too. Prerequisite: the subscription feature "
        "Microsoft.Compute/EncryptionAtHost is registered (az feature register --namespace Microsoft.Compute "
        "--name EncryptionAtHost); set false where it cannot be",
    )
    ephemeral_os_disk: bool = Field(
        False,
        description="OS disk on local storage; refused: with a customer-managed key, key rotation needs the VMs "
        "deleted first (Azure ephemeral OS disk docs)",
    )


class AzureIdentitySettings(StrictModel):
    """The nodes' user-assigned managed identity and the only roles it holds; or one brought by the user."""

    blob_read_containers: list[Annotated[str, Field(pattern=CONTAINER_ID)]] = Field(
        default_factory=list,
        description="blob container resource ids the nodes may read (Storage Blob Data Reader on each, never wider: "
        "/subscriptions/S/resourceGroups/RG/providers/Microsoft.Storage/storageAccounts/A/blobServices/default"
        "/containers/C)",
    )
    metrics_scope: str | None = Field(
        None,
        pattern=RESOURCE_ID,
        description="resource id where nodes publish metrics (a Data Collection Rule or Azure Monitor workspace): "
        "Monitoring Metrics Publisher there; unset = none",
    )
    identity_id: str | None = Field(
        None, pattern=IDENTITY_ID, description="bring: a user-assigned identity; unset: gpufleet creates one"
    )
    deployer_principal_type: Literal["User", "ServicePrincipal"] = Field(
        "User",
        description="what runs `pulumi up`: with a group's `idle`, that principal gets Monitoring Metrics Publisher "
        "on the scale set to seed the idle rule's metric, and Azure refuses a role assignment whose principal type "
        "does not match (UnmatchedPrincipalType). A CI login with a service principal sets ServicePrincipal",
    )


class AzureClusterSpec(ClusterSpec):
    cloud: Literal["azure"] = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    network: AzureNetworkSettings = Field(..., description="the VNet: created (cidr, zones) or brought (subnet id)")
    storage: AzureStorageSettings = Field(
        default_factory=AzureStorageSettings,
        description="disk encryption set and key, root disk, local NVMe",
    )
    identity: AzureIdentitySettings = Field(
        default_factory=AzureIdentitySettings,
        description="the node identity: created user-assigned, or brought by id",
    )
    admin_ssh_public_key: str | None = Field(
        None,
        pattern=r"^(ssh-rsa|ssh-ed25519|ecdsa-sha2-nistp\d+) [A-Za-z0-9+/=]+( .*)?$",
        description="public key of the nodes' admin user (Azure needs one for a Linux scale set without a "
        "password); a real deploy is refused without it. SSH is reachable only from network.admin_cidrs",
    )


class AzureImagesSpec(ImagesSpec):
    """VM Image Builder into a Compute Gallery. No key setting: the gallery distribution (this SDK's
    TargetRegion) takes no disk encryption set, so image versions use platform-managed keys; clusters encrypt
    the disks they create from them with their own disk encryption set."""

    BUILD_FIELD = "build_vm_size"

    cloud: Literal["azure"] = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    build_vm_size: str = Field(
        "Standard_D8s_v5",
        description="size of the build VM (vmProfile.vmSize): no GPU is needed to install drivers; the base image "
        "is Hyper-V Gen2, so a size that supports Generation 2",
    )
    max_concurrent_nodes: int = Field(
        LARGEST_IB_SCALE_SET,
        ge=1,
        validate_default=True,
        description="the most VMs created at once from this image in one region (e.g. the largest group's size.max); "
        "each region keeps one gallery replica per 20 of them, at least 3 (Azure Compute Gallery best practices). "
        "Default 100, the largest InfiniBand scale set; at most 1,000, a scale set's cap from a gallery image",
    )

    @field_validator("max_concurrent_nodes")
    @classmethod
    def _within_the_gallery_limits(cls, value: int, info: ValidationInfo) -> int:
        from components.clouds.azure.gallery_replicas import replicas_per_region

        from ...catalog import load_catalog  # read only when an Azure image stack is validated

        catalog = load_catalog()
        cap = int(catalog.limit("azure", "gallery_scale_set_max_vms"))
        if value > cap:
            raise ValueError(f"at most {cap}: a scale set from a gallery image holds up to {cap} VMs")
        regions = info.data.get("regions") or []
        replicas = replicas_per_region(value, catalog)
        most = int(catalog.limit("azure", "gallery_version_replicas_max"))
        if replicas * len(regions) > most:
            raise ValueError(
                f"{replicas} replicas in each of {len(regions)} regions is {replicas * len(regions)}, over the "
                f"{most} replicas an image version may have; lower it or list fewer regions"
            )
        return value
