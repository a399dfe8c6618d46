"""Azure facts for `gpufleet lock resolve`: AKS's newest patch of a Kubernetes minor in a location, and a marketplace
image version that must exist there.

Field names follow the SDK models: azure-mgmt-containerservice 41 (models/_models.py KubernetesVersionListResult
.values_property <- "values", KubernetesVersion.version / is_preview / patch_versions <- "patchVersions"; REST
"Managed Clusters - List Kubernetes Versions") and azure-mgmt-compute 39 (models/_models.py VirtualMachineImage
.properties.hyper_v_generation <- "hyperVGeneration", VirtualMachineImageResource.name = the version; REST
"Virtual Machine Images - Get" and "- List").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from ..lock.facts import BaseImageFact, ManagedVersionFact
from ..lock.versions import release_order
from .http import SourceError
from .sdk import read_time, require

T = TypeVar("T")
LISTED = 10  # image versions named in a message


def default_containerservice_client(subscription_id: str | None = None) -> Any:
    """ContainerServiceClient through DefaultAzureCredential for `subscription_id` (default: the subscription the
    Azure tools use, AZURE_SUBSCRIPTION_ID or the Azure CLI's default)."""
    return _client("azure.mgmt.containerservice", "ContainerServiceClient", subscription_id)


def default_compute_client(subscription_id: str | None = None) -> Any:
    """ComputeManagementClient through DefaultAzureCredential, as default_containerservice_client."""
    return _client("azure.mgmt.compute", "ComputeManagementClient", subscription_id)


def _client(module: str, kind: str, subscription_id: str | None) -> Any:
    sdk = require(module)
    identity = require("azure.identity")
    from azure.core.pipeline.transport import RequestsTransport

    from ..preflight.azure.clients import (
        CONNECT_TIMEOUT_SECONDS,
        READ_TIMEOUT_SECONDS,
        default_subscription,
        read_only_policies,
    )
    from ..preflight.findings import PreflightUnavailable

    try:
        subscription = subscription_id or default_subscription()
    except PreflightUnavailable as missing:
        raise SourceError(str(missing)) from None
    # The chain logs each credential it could not use; _answer reports the failure once, with the fix.
    logging.getLogger("azure.identity").setLevel(logging.ERROR)
    credential = identity.DefaultAzureCredential()
    transport = RequestsTransport(connection_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS)
    return getattr(sdk, kind)(credential, subscription, policies=read_only_policies(credential), transport=transport)


def aks_kubernetes_version(containerservice: Any, location: str, minor: str,
                           now: datetime | None = None) -> ManagedVersionFact:
    """The newest patch of `minor` AKS offers in `location`, unless AKS lists the minor as preview only."""
    source = f"Azure ManagedClusters.list_kubernetes_versions location={location}"
    listed = _answer(source, lambda: containerservice.managed_clusters.list_kubernetes_versions(location))
    minors = {str(v.version): v for v in (listed.values_property or []) if v.version}
    found = minors.get(minor)
    patches = list((found.patch_versions or {}) if found is not None and not found.is_preview else {})
    if not patches:
        offered = ", ".join(f"{m}{' (preview)' if v.is_preview else ''}" for m, v in
                            sorted(minors.items(), key=lambda item: release_order(item[0])))
        raise SourceError(f"{source}: AKS offers no generally available {minor} in {location}; it lists "
                          f"{offered or 'no version'}. Move the stack's Kubernetes version to one of them")
    newest = max(patches, key=release_order)
    return ManagedVersionFact(source=source, read_at=read_time(now), version=newest)


def azure_marketplace_image(compute: Any, location: str, urn: str, now: datetime | None = None) -> BaseImageFact:
    """The marketplace image `urn` (Publisher:Offer:Sku:Version) as it exists in `location`; its boot generation
    (hyperVGeneration V1/V2) is the boot mode."""
    parts = urn.split(":")
    if len(parts) != 4 or not all(parts):
        raise SourceError(f"{urn!r}: a marketplace image is Publisher:Offer:Sku:Version")
    publisher, offer, sku, version = parts
    source = f"Azure VirtualMachineImages.get location={location} {urn}"
    images = compute.virtual_machine_images
    found = None
    if version.lower() != "latest":  # the lock pins a version; "latest" would move under the bake
        found = _answer(source, lambda: images.get(location, publisher, offer, sku, version), missing_ok=True)
    if found is None:
        listing = f"Azure VirtualMachineImages.list location={location} {publisher}:{offer}:{sku}"
        listed = _answer(listing, lambda: images.list(location, publisher, offer, sku), missing_ok=True) or []
        versions = sorted((str(i.name) for i in listed if i.name), key=release_order, reverse=True)
        more = f" (and {len(versions) - LISTED} older)" if len(versions) > LISTED else ""
        raise SourceError(f"{source}: Azure offers no version {version} of {publisher}:{offer}:{sku} in {location}; "
                          f"{listing} names {', '.join(versions[:LISTED]) or 'none'}{more}. Pin one of them")
    generation = found.properties.hyper_v_generation if found.properties is not None else None
    # The SDK gives a HyperVGenerationTypes member for a value it knows, the text for one it does not.
    generation = getattr(generation, "value", generation)
    return BaseImageFact(source=source, read_at=read_time(now), image_id=urn,
                         boot_mode=str(generation) if generation else None)



def _answer(source: str, call: Callable[[], T], missing_ok: bool = False) -> T | None:
    """The call's answer; None for a 404 when `missing_ok`; every other failure a user meets is SourceError naming the
    call and the fix."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        HttpResponseError,
        ResourceNotFoundError,
        ServiceRequestError,
        ServiceResponseError,
    )

    from ..preflight.azure.clients import CREDENTIAL_SOURCE, SIGN_IN

    try:
        return call()
    except ResourceNotFoundError:
        if missing_ok:
            return None
        raise SourceError(f"{source}: Azure answered 404; check the location and the subscription") from None
    except ClientAuthenticationError as error:
        raise SourceError(f"{source}: Azure refused the credential ({_first_line(error)}); credential source: "
                          f"{CREDENTIAL_SOURCE}. Sign in again ({SIGN_IN}) and resolve again") from None
    except HttpResponseError as error:
        if error.status_code == 403:
            raise SourceError(f"{source}: access denied ({_first_line(error)}); give the signed-in identity Reader "
                              "on the subscription") from None
        raise SourceError(f"{source}: Azure answered HTTP {error.status_code} ({_first_line(error)})") from None
    except (ServiceRequestError, ServiceResponseError) as error:
        raise SourceError(f"{source}: no answer from Azure Resource Manager ({_first_line(error)}); check the "
                          "network (proxy, firewall) and resolve again") from None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
