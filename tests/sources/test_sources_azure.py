"""Azure readers of `lock resolve` through the real SDK clients (azure-mgmt-containerservice, azure-mgmt-compute),
answered from recorded JSON by tests/azure_replay.py's transport: the client builds each request, runs its policies
and deserialises the answer; the replay checks each request's method and path (location, URN parts)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.containerservice import ContainerServiceClient
from azure_replay import SUBSCRIPTION, TINY_BACKOFF, Replay, TestCredential

from gpufleet.preflight.azure.clients import read_only_policies
from gpufleet.sources.azure import (
    aks_kubernetes_version,
    azure_marketplace_image,
    default_compute_client,
    default_containerservice_client,
)
from gpufleet.sources.http import SourceError

FIXTURES = Path(__file__).parent.parent / "data" / "sources" / "azure"
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc)
URN = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202510230"
VERSIONS_PATH = (f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.ContainerService/locations/eastus"
                 "/kubernetesVersions")


def fixture(name: str) -> dict[str, Any]:
    """A recorded answer with {subscription} filled; each cites the API reference it follows."""
    recorded = json.loads((FIXTURES / f"{name}.json").read_text().replace("{subscription}", SUBSCRIPTION))
    assert recorded.get("_source"), f"{name}.json cites no API reference"
    return recorded


def client(kind: Any, replay: Replay, credential: Any = None) -> Any:
    credential = credential or TestCredential()
    return kind(credential, SUBSCRIPTION, transport=replay, policies=read_only_policies(credential, TINY_BACKOFF))


# --- AKS ----------------------------------------------------------------------------------------------------------

def test_aks_newest_patch_of_the_minor() -> None:
    replay = Replay().add(fixture("kubernetes-versions-eastus"))
    fact = aks_kubernetes_version(client(ContainerServiceClient, replay), "eastus", "1.34", now=NOW)
    assert fact.version == "1.34.10"  # not 1.34.9: patches compare as numbers
    assert fact.source == "Azure ManagedClusters.list_kubernetes_versions location=eastus"
    assert fact.read_at == NOW
    assert replay.asked == [f"GET {VERSIONS_PATH}"]


def test_aks_preview_only_minor_is_refused_naming_the_minors() -> None:
    replay = Replay().add(fixture("kubernetes-versions-eastus"))
    with pytest.raises(SourceError) as raised:
        aks_kubernetes_version(client(ContainerServiceClient, replay), "eastus", "1.36")
    assert "AKS offers no generally available 1.36 in eastus; it lists 1.33, 1.34, 1.35, 1.36 (preview)" in str(
        raised.value)


def test_aks_unlisted_minor_is_refused_naming_the_minors() -> None:
    replay = Replay().add(fixture("kubernetes-versions-eastus"))
    with pytest.raises(SourceError, match=r"no generally available 1\.31 in eastus; it lists 1\.33, 1\.34"):
        aks_kubernetes_version(client(ContainerServiceClient, replay), "eastus", "1.31")


def test_aks_expired_sign_in_says_how_to_sign_in() -> None:
    replay = Replay().add(fixture("kubernetes-versions-eastus"))
    expired = TestCredential("AADSTS700082: The refresh token has expired due to inactivity.")
    with pytest.raises(SourceError) as raised:
        aks_kubernetes_version(client(ContainerServiceClient, replay, expired), "eastus", "1.34")
    assert "Azure refused the credential (AADSTS700082" in str(raised.value)
    assert "`az login`" in str(raised.value)


def test_aks_access_denied_asks_for_reader() -> None:
    denied = {"status": 403, "body": {"error": {
        "code": "AuthorizationFailed",
        "message": "The client does not have authorization to perform action "
                   "'Microsoft.ContainerService/locations/kubernetesVersions/read'"}}}
    replay = Replay().answer(f"GET {VERSIONS_PATH}", denied)
    with pytest.raises(SourceError) as raised:
        aks_kubernetes_version(client(ContainerServiceClient, replay), "eastus", "1.34")
    assert "access denied (" in str(raised.value) and "AuthorizationFailed" in str(raised.value)
    assert "Reader on the subscription" in str(raised.value)


# --- marketplace image --------------------------------------------------------------------------------------------

def test_marketplace_image_version_found_with_its_generation() -> None:
    replay = Replay().add(fixture("vm-image"))
    fact = azure_marketplace_image(client(ComputeManagementClient, replay), "eastus", URN, now=NOW)
    assert (fact.image_id, fact.boot_mode, fact.name) == (URN, "V2", None)
    assert fact.source == f"Azure VirtualMachineImages.get location=eastus {URN}"
    assert replay.asked == [fixture("vm-image")["request"]]


def test_marketplace_image_missing_version_names_the_newest_listed() -> None:
    replay = Replay().add(fixture("vm-image-missing")).add(fixture("vm-image-versions"))
    urn = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202301010"
    with pytest.raises(SourceError) as raised:
        azure_marketplace_image(client(ComputeManagementClient, replay), "eastus", urn)
    message = str(raised.value)
    assert "Azure offers no version 22.04.202301010 of Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2 in " \
           "eastus" in message
    assert "names 22.04.202510230, 22.04.202509150, 22.04.202408010. Pin one of them" in message


def test_marketplace_latest_is_refused_with_the_versions() -> None:
    replay = Replay().add(fixture("vm-image-versions"))
    urn = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"
    with pytest.raises(SourceError, match=r"no version latest .* names 22\.04\.202510230, "):
        azure_marketplace_image(client(ComputeManagementClient, replay), "eastus", urn)
    assert replay.asked == [fixture("vm-image-versions")["request"]]  # never a get of "latest"


def test_marketplace_urn_must_have_four_parts() -> None:
    with pytest.raises(SourceError, match=r"a marketplace image is Publisher:Offer:Sku:Version"):
        azure_marketplace_image(client(ComputeManagementClient, Replay()), "eastus", "Canonical:jammy:22_04-lts")


# --- default clients ----------------------------------------------------------------------------------------------

def test_default_clients_use_the_tools_subscription(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUBSCRIPTION)
    assert default_containerservice_client()._config.subscription_id == SUBSCRIPTION
    assert default_compute_client("0b7d2f4e-8a15-4c33-b6e9-5f2a1c3d9e80")._config.subscription_id == (
        "0b7d2f4e-8a15-4c33-b6e9-5f2a1c3d9e80")


def test_default_client_without_a_subscription(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AZURE_SUBSCRIPTION_ID", "ARM_SUBSCRIPTION_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(tmp_path))
    with pytest.raises(SourceError, match=r"set AZURE_SUBSCRIPTION_ID"):
        default_compute_client()
