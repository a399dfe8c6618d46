"""AWS's part of the program: the cluster and image pipeline through components/clouds/aws, and the offline
engine's answers (mock_answers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..backend import ResolvedCluster
    from .stack_model import AwsImagesSpec


def build_cluster(resolved: ResolvedCluster) -> Mapping[str, Any]:
    from components.clouds.aws.cluster import AwsGpuCluster  # pulumi_aws loads only when an AWS cluster is built

    return AwsGpuCluster(resolved).exports()


def build_images(spec: AwsImagesSpec) -> Mapping[str, Any]:
    from components.clouds.aws.images_stack import build_aws_images

    return build_aws_images(spec)


def mock_resource(typ: str, name: str, inputs: dict[str, Any], region: str) -> tuple[str, dict[str, Any]]:
    from . import mock_answers

    return mock_answers.new_resource(typ, name, inputs, region)


def mock_invoke(token: str, region: str, zones: list[str]) -> dict[str, Any] | None:
    from . import mock_answers

    return mock_answers.invoke(token, region, zones)


def role_names() -> Mapping[str, str]:
    return {}  # a grant names its policy's actions in place
