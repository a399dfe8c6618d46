"""Azure's part of the program: the cluster and image pipeline through components/clouds/azure, and the offline
engine's answers (mock_answers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..backend import ResolvedCluster
    from .stack_model import AzureImagesSpec


def build_cluster(resolved: ResolvedCluster) -> Mapping[str, Any]:
    # pulumi_azure_native loads only when an Azure cluster is built
    from components.clouds.azure.cluster import AzureGpuCluster

    return AzureGpuCluster(resolved).exports()


def build_images(spec: AzureImagesSpec) -> Mapping[str, Any]:
    from components.clouds.azure.images_stack import build_azure_images

    return build_azure_images(spec)


def mock_resource(typ: str, name: str, inputs: dict[str, Any], region: str) -> tuple[str, dict[str, Any]]:
    from . import mock_answers

    return mock_answers.new_resource(typ, name, inputs, region)


def mock_invoke(token: str, region: str, zones: list[str]) -> dict[str, Any] | None:
    from . import mock_answers

    return mock_answers.invoke(token, region, zones)


def role_names() -> Mapping[str, str]:
    """Azure's built-in roles the stack assigns, by definition GUID (the pack's tables, which cite them)."""
    from policies.azure.aks import AKS_ROLES
    from policies.azure.identity import BUILT_IN_ROLES

    return {**BUILT_IN_ROLES, **{guid: name for guid, (name, _) in AKS_ROLES.items()}}
