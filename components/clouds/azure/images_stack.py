"""An image-build stack on Azure: the VM Image Builder template that bakes one lock profile into a gallery.

Its outputs are what `gpufleet images pin --stack NAME` reads (`pulumi stack output --json`): the profile,
`images` (region -> gallery image version id of this bake, the same version replicated to every region),
the bake's `build_status` (pin refuses an image whose bake has not succeeded) and the parent image.
"""

from __future__ import annotations

import pulumi

from gpufleet.catalog import load_catalog
from gpufleet.clouds.azure.names import GALLERY, NAMES
from gpufleet.clouds.azure.stack_model import AzureImagesSpec
from gpufleet.clouds.naming import fit
from gpufleet.lock import load_lock
from gpufleet.lock.bundle import installer_command

from ...tags import resource_tags
from .gallery_replicas import replicas_per_region, zone_regions
from .image_pipeline import AzureImagePipeline, AzureImagePipelineArgs


def gallery_name(spec: AzureImagesSpec) -> str:
    """`gpufleet_<name>_<hash>`: gallery names are unique in the subscription, not the resource group ("Gallery
    names must be unique within your subscription", MicrosoftDocs azure-docs articles/virtual-machines/
    create-gallery.md). Two image stacks in one subscription (a fork keeps `name: images`) differ in their Pulumi
    project or stack, or their build region: the hash covers those."""
    base = f"gpufleet_{spec.name}".replace("-", "_")  # galleries take no hyphen
    return fit(base, NAMES.limit(GALLERY, "galleryName"), spec.regions[0], pulumi.get_project(),
               pulumi.get_stack(), sep="_")


def build_azure_images(spec: AzureImagesSpec) -> dict[str, pulumi.Output]:
    lock = load_lock()
    catalog = load_catalog()
    profile = lock.profiles[spec.profile]
    # validate_images made sure the lock pins a parent image for the build region.
    parent_image = lock.base_image(spec.cloud, spec.regions[0]) or ""
    pipeline = AzureImagePipeline(
        spec.name,
        AzureImagePipelineArgs(
            profile=spec.profile,
            parent_image=parent_image,
            installer_script=installer_command(profile, "azure", spec.nvswitch),
            regions=list(spec.regions),
            vm_size=spec.build_vm_size,
            gallery_name=gallery_name(spec),
            replicas=replicas_per_region(spec.max_concurrent_nodes, catalog),
            zone_redundant_regions=zone_regions(catalog) & set(spec.regions),
            tags=resource_tags(spec.tags, spec.name, "images", **{"gpufleet:profile": spec.profile}),
        ),
    )
    images = pipeline.image_version_id.apply(lambda version: {region: version for region in spec.regions})
    return {"template_id": pipeline.template_id, "gallery_image_id": pipeline.gallery_image_id,
            "images": images, "build_status": pipeline.build_status,
            "profile": pulumi.Output.from_input(spec.profile), "cloud": pulumi.Output.from_input(spec.cloud),
            # Who baked: `images pin --stack` takes only this stack's outputs.
            "project": pulumi.Output.from_input(pulumi.get_project()),
            "stack": pulumi.Output.from_input(pulumi.get_stack()),
            "parent_image": pulumi.Output.from_input(parent_image)}
