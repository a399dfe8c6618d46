"""Azure VM Image Builder template that bakes one pinned driver image profile into a Compute Gallery.

The template starts from a marketplace image at an explicit version, runs the installer, checks the driver
and the node check on the build VM, and distributes to a gallery image definition under an explicit,
content-derived version, so the stack knows the image version id before the bake finishes. Its identity
holds a custom role with only the gallery permissions a distribution needs, assigned on the gallery.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field

import pulumi
import pulumi_azure_native as azure

from gpufleet.clouds.azure.names import NAMES
from gpufleet.clouds.naming import fit
from gpufleet.lock.bundle import content_version, image_check
from gpufleet.lock.image_ids import AZURE_REGION, AZURE_URN, EXPECTED_PARENT_SHAPE

from .gallery_replicas import LOCALLY_REDUNDANT, ZONE_REDUNDANT
from .storage import propagated

# The gallery image definition carries the profile in its name (letters, digits, '.', '-', '_').
PROFILE = re.compile(r"^[A-Za-z0-9][-_A-Za-z0-9.]{0,63}$")
VM_SIZE = re.compile(r"^Standard_[A-Za-z0-9_]+$")
# What a gallery distribution needs on the gallery (VM Image Builder permissions, "Allow VM Image Builder
# to distribute images": the gallery, its image definitions and their versions).
GALLERY_ACTIONS = (
    "Microsoft.Compute/galleries/read",
    "Microsoft.Compute/galleries/images/read",
    "Microsoft.Compute/galleries/images/versions/read",
    "Microsoft.Compute/galleries/images/versions/write",
)
# Driver, CUDA and fabric installs outlast the service's default of 240 minutes only on slow mirrors;
# the service allows up to 960 (image-builder-json.md, buildTimeoutInMinutes).
BUILD_TIMEOUT_MINUTES = 360
# The Compute Gallery's per-region replica maximum (catalog limit gallery_region_replicas_max).
MAX_REGION_REPLICAS = 50
ROLE_NAME_MAX = NAMES.limit("azure-native:authorization:RoleDefinition", "roleName")


@dataclass(frozen=True)
class AzureImagePipelineArgs:
    """Inputs of AzureImagePipeline."""

    profile: str
    """Image profile name from images/lock.yaml; names the gallery image definition."""
    parent_image: str
    """Marketplace image URN publisher:offer:sku:version with an explicit version (images/lock.yaml
    base_images); "latest" is refused: the service would resolve it when the build runs."""
    installer_script: str
    """Shell script the build runs as root, rendered by the caller from the image lock."""
    regions: list[str]
    """Replication regions of the image version; the first is the build region (gallery, template)."""
    vm_size: str
    """Size of the build VM (no GPU needed to install drivers); a Gen2-capable size."""
    gallery_name: str
    """Compute Gallery name: letters, digits, '_' and '.' only."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for every resource and for what the service creates."""
    os_disk_gb: int = 64
    """OS disk of the build VM and so the image; a cluster's OS disk must be at least this size."""
    replicas: int = 1
    """Replicas of the image version in each region (gallery_replicas.replicas_per_region); 1 is the service's
    default, which serves about 20 concurrent VM creates."""
    zone_redundant_regions: frozenset[str] = frozenset()
    """Regions whose replicas go on Standard_ZRS (regions with availability zones); the rest on Standard_LRS."""

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or not PROFILE.match(self.profile):
            raise ValueError(f"profile: {self.profile!r} must be 1-64 letters, digits, '-', '_' or '.'")
        image = self.parent_image
        if not isinstance(image, str) or "latest" in image.lower() or not AZURE_URN.fullmatch(image):
            raise ValueError(f"parent_image: {image!r} is not pinnable: expected {EXPECTED_PARENT_SHAPE['azure']}")
        if not isinstance(self.installer_script, str) or not self.installer_script.strip():
            raise ValueError("installer_script: must be a non-empty shell script")
        if not self.regions:
            raise ValueError("regions: needs at least one region (the first is the build region)")
        for region in self.regions:
            if not isinstance(region, str) or not AZURE_REGION.fullmatch(region):
                raise ValueError(f"regions: {region!r} is not an Azure region name (e.g. eastus)")
        if len(set(self.regions)) != len(self.regions):
            raise ValueError(f"regions: {self.regions} lists a region twice")
        if not VM_SIZE.match(self.vm_size):
            raise ValueError(f"vm_size: {self.vm_size!r} is not an Azure VM size (Standard_...)")
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,79}$", self.gallery_name):
            raise ValueError(f"gallery_name: {self.gallery_name!r} may hold only letters, digits, '_' and '.'")
        if not isinstance(self.replicas, int) or not 1 <= self.replicas <= MAX_REGION_REPLICAS:
            raise ValueError(f"replicas: must be an integer from 1 to {MAX_REGION_REPLICAS}, got {self.replicas!r}")
        if not isinstance(self.os_disk_gb, int) or self.os_disk_gb < 30:
            raise ValueError(f"os_disk_gb: must be an integer >= 30, got {self.os_disk_gb!r}")

    @property
    def source(self) -> dict[str, str]:
        publisher, offer, sku, version = self.parent_image.split(":")
        return {"publisher": publisher, "offer": offer, "sku": sku, "version": version}


def customizer_command(installer_script: str) -> str:
    """The installer as one inline command: the build runs customizers as a sudo-capable user under /bin/sh,
    so the bash script travels base64-encoded (no quoting of its own quotes) and runs as root under bash."""
    encoded = base64.b64encode(installer_script.encode()).decode()
    return f"echo '{encoded}' | base64 -d | sudo bash"


class AzureImagePipeline(pulumi.ComponentResource):
    """Resource group, gallery and image definition, a least-privilege identity and the Image Builder template."""

    template_id: pulumi.Output[str]
    gallery_image_id: pulumi.Output[str]
    image_version_id: pulumi.Output[str]
    """The gallery image version this bake writes (what `gpufleet images pin` records per region)."""
    build_status: pulumi.Output[str | None]
    """The template's last run state (Running, Succeeded, Failed...) as the provider last read it."""

    def __init__(self, name: str, args: AzureImagePipelineArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:azure:ImagePipeline", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        gallery = create_gallery(name, args, child)
        identity, grant_ready = create_build_identity(name, args, gallery, child)
        template, version_id = create_pipeline(name, args, gallery, identity, grant_ready, self)

        self.template_id = template.id
        self.gallery_image_id = gallery.definition.id
        self.image_version_id = version_id
        self.build_status = template.last_run_status.apply(lambda status: status.run_state if status else None)
        self.register_outputs(
            {
                "template_id": self.template_id,
                "gallery_image_id": self.gallery_image_id,
                "image_version_id": self.image_version_id,
                "build_status": self.build_status,
            }
        )


@dataclass(frozen=True)
class Gallery:
    group: azure.resources.ResourceGroup
    gallery: azure.compute.Gallery
    definition: azure.compute.GalleryImage
    """The profile's image definition the bake writes versions into."""


def create_gallery(name: str, args: AzureImagePipelineArgs, child: pulumi.ResourceOptions) -> Gallery:
    """The resource group, the Compute Gallery and the profile's Gen2 Linux image definition."""
    location, tags = args.regions[0], dict(args.tags)
    group = azure.resources.ResourceGroup(f"{name}-rg", location=location, tags=tags, opts=child)
    gallery = azure.compute.Gallery(
        f"{name}-gallery",
        gallery_name=args.gallery_name,
        resource_group_name=group.name,
        location=location,
        description=f"gpufleet images ({args.profile})",
        tags=tags,
        opts=child,
    )
    definition = azure.compute.GalleryImage(
        f"{name}-definition",
        gallery_name=gallery.name,
        gallery_image_name=f"gpufleet-{args.profile}",
        resource_group_name=group.name,
        location=location,
        os_type=azure.compute.OperatingSystemTypes.LINUX,
        os_state=azure.compute.OperatingSystemStateTypes.GENERALIZED,
        # ND sizes boot Gen2 images only; the parent image is the Gen2 SKU.
        hyper_v_generation=azure.compute.HyperVGeneration.V2,
        architecture=azure.compute.Architecture.X64,
        identifier=azure.compute.GalleryImageIdentifierArgs(
            publisher="gpufleet", offer="gpu-node", sku=args.profile
        ),
        description=f"gpufleet image profile {args.profile}",
        tags=tags,
        opts=child,
    )
    return Gallery(group, gallery, definition)


def create_build_identity(
    name: str, args: AzureImagePipelineArgs, gallery: Gallery, child: pulumi.ResourceOptions
) -> tuple[azure.managedidentity.UserAssignedIdentity, pulumi.Resource]:
    """The template's identity with a custom role holding only the gallery permissions a distribution needs,
    assigned on the gallery; returns it and what waits for the assignment to propagate."""
    group = gallery.group
    identity = azure.managedidentity.UserAssignedIdentity(
        f"{name}-identity", resource_group_name=group.name, location=args.regions[0], tags=dict(args.tags), opts=child
    )
    role = azure.authorization.RoleDefinition(
        f"{name}-gallery-role",
        scope=group.id,
        assignable_scopes=[group.id],
        # Unique in the tenant: the hash of the resource group id (subscription and group) keeps it this stack's.
        role_name=group.id.apply(
            lambda group_id: fit(f"gpufleet image distribution ({name}, {args.profile})", ROLE_NAME_MAX, group_id)
        ),
        description="Write image versions into one gpufleet Compute Gallery (VM Image Builder)",
        role_type="CustomRole",
        permissions=[azure.authorization.PermissionArgs(actions=list(GALLERY_ACTIONS))],
        opts=child,
    )
    # A custom role is assigned only once it has replicated, as every role is used only after its assignment has.
    role_ready = propagated(f"{name}-gallery-role", role, child)
    grant = azure.authorization.RoleAssignment(
        f"{name}-gallery-grant",
        principal_id=identity.principal_id,
        principal_type=azure.authorization.PrincipalType.SERVICE_PRINCIPAL,
        role_definition_id=role.id,
        scope=gallery.gallery.id,
        description="VM Image Builder distributes image versions into this gallery only",
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[role_ready])),
    )
    # The service checks the identity's permissions on the gallery when the template is created (and the build
    # distributes right after): the template waits until the custom role's assignment has propagated.
    return identity, propagated(f"{name}-gallery-grant", grant, child)


def create_pipeline(
    name: str, args: AzureImagePipelineArgs, gallery: Gallery, identity: azure.managedidentity.UserAssignedIdentity,
    grant_ready: pulumi.Resource, parent: pulumi.Resource,
) -> tuple[azure.virtualmachineimages.VirtualMachineImageTemplate, pulumi.Output[str]]:
    """The image template, which bakes when created, and the image version id it writes."""
    vmi, tags = azure.virtualmachineimages, dict(args.tags)
    install = customizer_command(args.installer_script)
    # Explicit versioning (image-builder-json.md, galleryImageId ".../versions/<version>"): the version
    # follows the parent image and the installer, so the same bake is the same version.
    version = content_version(args.parent_image, install, str(args.os_disk_gb))
    version_id = pulumi.Output.concat(gallery.definition.id, "/versions/", version)
    template = vmi.VirtualMachineImageTemplate(
        f"{name}-template",
        resource_group_name=gallery.group.name,
        location=args.regions[0],
        identity=vmi.ImageTemplateIdentityArgs(
            type=vmi.ResourceIdentityType.USER_ASSIGNED,
            user_assigned_identities=[identity.id],
        ),
        source=vmi.ImageTemplatePlatformImageSourceArgs(type="PlatformImage", **args.source),
        customize=[vmi.ImageTemplateShellCustomizerArgs(type="Shell", name="InstallDriverStack", inline=[install])],
        validate=vmi.ImageTemplatePropertiesValidateArgs(
            continue_distribute_on_failure=False,
            in_vm_validations=[
                # The build VM still runs the marketplace kernel (no Linux restart customizer): the check reads the
                # modules of the kernel the image boots, not the running one's.
                vmi.ImageTemplateShellValidatorArgs(
                    type="Shell", name="BootKernelModulesAndNodeTools", inline=[image_check(booted=False)]
                )
            ],
        ),
        distribute=[
            vmi.ImageTemplateSharedImageDistributorArgs(
                type="SharedImage",
                gallery_image_id=version_id,
                run_output_name=f"{args.profile.replace('.', '-')}-gallery",
                target_regions=[
                    vmi.TargetRegionArgs(
                        name=region,
                        replica_count=args.replicas,
                        storage_account_type=ZONE_REDUNDANT if region in args.zone_redundant_regions
                        else LOCALLY_REDUNDANT,
                    )
                    for region in args.regions
                ],
                artifact_tags={**tags, "gpufleet:profile": args.profile, "gpufleet:parent-image": args.parent_image},
            )
        ],
        vm_profile=vmi.ImageTemplateVmProfileArgs(vm_size=args.vm_size, os_disk_size_gb=args.os_disk_gb),
        build_timeout_in_minutes=BUILD_TIMEOUT_MINUTES,
        # `pulumi up` bakes: the service starts a build when the template is created.
        auto_run=vmi.ImageTemplateAutoRunArgs(state=vmi.AutoRunState.AUTO_RUN_ENABLED),
        managed_resource_tags=tags,
        tags=tags,
        # Image templates cannot be updated in place; a changed bake is a new template (and version).
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[grant_ready], replace_on_changes=["*"]),
    )
    return template, version_id
