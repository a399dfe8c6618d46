"""Images the lock pins exist where they boot: a cluster's gallery image version (or marketplace image) in its
region, an image stack's base image in its build region.

Gallery Image Versions - Get through Resources - Get By Id at api-version 2024-03-03, the Compute Gallery version
azure-native's GalleryImageVersion uses (properties.publishingProfile.targetRegions[].name, display names such as
"East US"; properties.provisioningState); Virtual Machine Images - Get (GET .../locations/{location}/publishers/
{publisher}/artifacttypes/vmimage/offers/{offer}/skus/{sku}/versions/{version}), 404 where the version is not
offered in that location.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from gpufleet.lock.image_ids import AZURE_GALLERY_VERSION, AZURE_URN

from ..concurrent import Check
from ..findings import Finding
from . import ids
from .brought import get_by_id
from .clients import AzureClients, ask_or_missing

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster
    from gpufleet.stackfile import ImagesSpec

GALLERY_API = "2024-03-03"


def cluster_image_checks(clients: AzureClients, cluster: ResolvedCluster) -> list[Check]:
    spec = cluster.spec
    entry = cluster.image
    if spec.scheduler.kind == "kubernetes":
        return []  # AKS nodes boot AKS's node image: the lock profile gives the driver version only
    if entry is None or entry.id is None:
        return []  # unbaked: the plan says so and a real deploy refuses it before any call
    where = f"images/lock.yaml profiles.{spec.image}.images.azure.{spec.region}"
    return [lambda: list(_image(clients, entry.id, spec.region, "image", where))]


def images_stack_checks(clients: AzureClients, spec: ImagesSpec) -> list[Check]:
    from gpufleet.lock import load_lock

    build = spec.regions[0]
    base = load_lock().base_image("azure", build)
    if base is None:
        return []  # unconfirmed: the plan says so and a real deploy refuses it
    return [lambda: list(_image(clients, base, build, "regions[0]", f"images/lock.yaml base_images.azure.{build}"))]


def _image(clients: AzureClients, image_id: str, region: str, field: str, where: str) -> Iterator[Finding]:
    if AZURE_GALLERY_VERSION.fullmatch(image_id):
        yield from _gallery_version(clients, image_id, region, field, where)
    elif AZURE_URN.fullmatch(image_id):
        yield from _marketplace(clients, image_id, region, field, where)


def _gallery_version(clients: AzureClients, image_id: str, region: str, field: str, where: str) -> Iterator[Finding]:
    version = get_by_id(clients, f"the gallery image version {image_id}", image_id, GALLERY_API)
    if version is None:
        yield Finding("azure-image", field, True,
                      f"{where} pins {image_id}, which does not exist or this subscription cannot see",
                      "bake and pin it again (pulumi up --stack <images stack>, gpufleet images pin), or share the "
                      "gallery with this subscription")
        return
    props = version.properties or {}
    state = str(props.get("provisioningState") or "")
    if state and state.lower() != "succeeded":
        yield Finding("azure-image", field, True, f"{where} pins a gallery image version in state {state}",
                      "wait for the version to finish (or bake it again), then run preflight again")
    targets = [str(t.get("name", "")) for t in (props.get("publishingProfile") or {}).get("targetRegions") or []
               if isinstance(t, dict)]
    if not any(ids.region_key(t) == ids.region_key(region) for t in targets):
        yield Finding("azure-image", field, True,
                      f"{where} pins a gallery image version replicated to {', '.join(targets) or 'no region'}, "
                      f"not {region}",
                      f"add {region} to the image stack's regions and bake again, or replicate the version "
                      f"(az sig image-version update --add publishingProfile.targetRegions name={region})")


def _marketplace(clients: AzureClients, urn: str, region: str, field: str, where: str) -> Iterator[Finding]:
    publisher, offer, sku, version = urn.split(":")
    found = ask_or_missing(clients, f"the marketplace image {urn} in {region}",
                           lambda: clients.compute.virtual_machine_images.get(region, publisher, offer, sku, version))
    if found is None:
        yield Finding("azure-image", field, True, f"{where} pins {urn}, which Azure does not offer in {region}",
                      f"pin a version listed by `az vm image list --location {region} --publisher {publisher} "
                      f"--offer {offer} --sku {sku} --all --output table`")
