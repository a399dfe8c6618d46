"""`gpufleet plan`: stack file -> validated spec -> program under the mock engine -> policies -> summary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pulumi

from components.bootstrap import BootstrapError
from components.runtime import recorded_refusals, recorded_warnings

from ..pack_config.derive import policy_pack_config, user_policy
from ..pack_config.floor import bound_stack, exceptions_in_use, organisation
from ..pack_config.settings import PolicyConfigError
from ..prepare import Prepared, prepare
from ..program import build
from ..stackfile import POLICY_KEY, ImagesSpec, SpecError, SpecInvalid, load_stack
from ..stackfile.read import PROJECT
from .cost import summarize
from .engine import run_program
from .policy_runner import run_policies
from .record import RecordedResource
from .stack_facts import stack_fact_findings
from .support_warnings import plan_warnings, unheard_key_expiry

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

    def to_json(self, show_secrets: bool = False, digest_key: bytes | None = None) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "cloud": self.cloud,
            "region": self.region,
            "resources": [r.to_json(show_secrets, digest_key) for r in self.resources],
            "policies": self.policies,
            "summary": self.summary,
        }


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def plan_stack(path: Path, stacks_dir: Path | None = None, today: date | None = None) -> PlanResult:
    """Plan one stack file; raises SpecInvalid (exit 2) before any resource when the stack is invalid. `today`
    (default: the system's date) dates the plan's warnings."""
    return plan_and_prepared(path, stacks_dir, today)[0]


def plan_and_prepared(
    path: Path, stacks_dir: Path | None = None, today: date | None = None
) -> tuple[PlanResult, Prepared]:
    """The plan of one stack file and the validated stack it was built from (what `preflight` asks the account
    about); raises SpecInvalid like plan_stack."""
    today = today or date.today()
    config = load_stack(path, stacks_dir)
    name = stack_name(path)
    bound = bound_stack(path)  # organisation exceptions bind to the project's own stack file only
    prepared = prepare(config)
    if isinstance(prepared, ImagesSpec):
        cloud, region, zones = prepared.cloud, prepared.regions[0], []
        standing = prepared.unpriced_standing()
        hourly = None if standing else 0.0  # what bills between bakes without a catalog price: null, never 0
        summary = {"gpus": {"min": 0, "desired": 0, "max": 0},
                   "hourly_usd": {"desired_on_demand": hourly, "desired_expected": hourly, "max_on_demand": hourly},
                   "node_groups": [], **({"unpriced": standing} if standing else {})}
    else:
        spec = prepared.spec
        cloud, region, zones = spec.cloud, spec.region, list(spec.network.zones)
        summary = summarize(prepared).to_json()
        if spec.derived:  # what the stack left out and its scheduler implies (scheduler.derive_defaults)
            summary["derived"] = list(spec.derived)
        if warnings := [*plan_warnings(spec, today, prepared.profile.driver if prepared.profile else None),
                        *unheard_key_expiry(prepared)]:
            summary["warnings"] = warnings
    try:
        with recorded_refusals() as refusals, recorded_warnings() as warned:
            resources = run_program(
                lambda: build(prepared), config, project=PROJECT, stack=name, region=region, zones=zones
            )
        if refusals:  # what a real `pulumi up` stops on: named with its field and fix, on every cloud alike
            summary["refusals"] = [{"field": r.field, "message": r.message} for r in refusals]
        if warned:  # what a real run logs as unconfirmed (components/runtime.py, warn_unconfirmed)
            summary["warnings"] = [*summary.get("warnings", []), *warned]
    except pulumi.RunError as exc:
        raise SpecInvalid([SpecError("", str(exc))]) from None
    except BootstrapError as exc:  # a node's bootstrap cannot be rendered from these settings (e.g. over the size cap)
        raise SpecInvalid([SpecError("node_groups", str(exc))]) from None
    try:
        pack_config = policy_pack_config(config, prepared, bound)
        report = run_policies(resources, pack_config)
    except PolicyConfigError as exc:
        # The runner names fields from the pack config's root; in a stack file that root is gpufleet:policy.
        raise SpecInvalid([SpecError("", str(exc).replace("policy config", POLICY_KEY, 1))]) from None
    if not isinstance(prepared, ImagesSpec) and prepared.spec.scheduler.kind == "kubernetes":
        from .schedulable.stack import add_schedulability  # loads the Kubernetes components: their clusters only

        add_schedulability(resources, prepared, summary, report)
    findings = stack_fact_findings(prepared if isinstance(prepared, ImagesSpec) else prepared.spec,
                                   (r.inputs for r in resources), today)
    if unresolved := [f.to_json() for f in findings if f.status != "stale"]:
        summary["unresolved_facts"] = unresolved
    if stale := [f"{f.field}: {f.message}" for f in findings if f.status == "stale"]:
        summary["warnings"] = [*summary.get("warnings", []), *stale]
    result = PlanResult(
        stack=name,
        cloud=cloud,
        region=region,
        resources=resources,
        policies={**report.to_json(), "exceptions": exceptions_in_use(
            user_policy(config), bound, today, organisation()
        )},
        summary=summary,
        mandatory_failed=report.has_mandatory,
    )
    return result, prepared
