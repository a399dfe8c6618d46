"""`gpufleet plan`: stack file -> validated spec -> program under the mock engine -> policies -> summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from ..catalog import Catalog, load_catalog
from ..program import build
from ..spec import (
    CLUSTER_KEY,
    IMAGES_KEY,
    ClusterSpec,
    ImagesSpec,
    SpecError,
    SpecInvalid,
    load_stack,
    validate_cluster,
    validate_images,
)
from ..spec.rules import Context, LockWithImages
from ..spec.validate import default_lock
from .cost import summarize
from .engine import run_program
from .policy_config import policy_pack_config
from .policy_runner import run_policies
from .record import RecordedResource

PROJECT = "gpufleet"
EXIT_CLEAN, EXIT_POLICY, EXIT_INVALID = 0, 1, 2


@dataclass
class PlanResult:
    stack: str
    cloud: str
    region: str
    resources: list[RecordedResource]
    policies: dict[str, Any]
    summary: dict[str, Any]
    mandatory_failed: bool

    @property
    def exit_code(self) -> int:
        return EXIT_POLICY if self.mandatory_failed else EXIT_CLEAN

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "cloud": self.cloud,
            "region": self.region,
            "resources": [r.to_json() for r in self.resources],
            "policies": self.policies,
            "summary": self.summary,
        }


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def validated_spec(
    config: dict[str, Any], catalog: Catalog | None = None, lock: LockWithImages | None = None
) -> ClusterSpec | ImagesSpec:
    """The stack's cluster or image-build spec, validated; SpecInvalid (exit 2) when it holds neither."""
    if CLUSTER_KEY in config:
        return validate_cluster(config[CLUSTER_KEY], catalog, lock)
    if IMAGES_KEY in config:
        return validate_images(config[IMAGES_KEY], lock)
    raise SpecInvalid([SpecError("config", f"set {CLUSTER_KEY} (a cluster) or {IMAGES_KEY} (an image build)")])


def plan_stack(path: Path, stacks_dir: Path | None = None) -> PlanResult:
    """Plan one stack file; raises SpecInvalid (exit 2) before any resource when the stack is invalid."""
    config = load_stack(path, stacks_dir)
    name = stack_name(path)
    catalog, lock = load_catalog(), default_lock()
    spec = validated_spec(config, catalog, lock)
    if isinstance(spec, ClusterSpec):
        cloud, region, zones = spec.cloud, spec.region, list(spec.network.zones)
        summary = summarize(spec, Context(catalog=catalog, lock=lock)).to_json()
    else:
        cloud, region, zones = spec.cloud, spec.regions[0], []
        summary = {"gpus": {"min": 0, "desired": 0, "max": 0},
                   "hourly_usd": {"desired_on_demand": 0.0, "desired_expected": 0.0, "max_on_demand": 0.0},
                   "node_groups": []}
    try:
        resources = run_program(build, config, project=PROJECT, stack=name, region=region, zones=zones)
    except pulumi.RunError as exc:
        raise SpecInvalid([SpecError("", str(exc))]) from None
    report = run_policies(resources, policy_pack_config(config, spec))
    return PlanResult(
        stack=name,
        cloud=cloud,
        region=region,
        resources=resources,
        policies=report.to_json(),
        summary=summary,
        mandatory_failed=report.has_mandatory,
    )
