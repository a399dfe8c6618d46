"""A Kubernetes stack's schedulability, for its plan: in the summary how many pod templates were checked, what was
not (and why) and per pod with no node what each group lacks; each such pod is also a mandatory violation of
SCHEDULABLE (the plan exits 1 and every report shows it, as for a pack rule; the pack cannot run it: it reads the
catalog and the components' device facts, which the pack never imports)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...clouds.backend import ResolvedCluster
from ..policy_runner import PolicyReport, Violation
from ..record import RecordedResource
from . import SCHEDULABLE
from .check import Unschedulable, unschedulable
from .pods import PodSource, plan_pods
from .pools import node_templates


def stack_findings(resources: Sequence[RecordedResource], resolved: ResolvedCluster,
                   extra: Sequence[PodSource] = ()) -> tuple[list[Unschedulable], int, list[str]]:
    """The plan's pods (and `extra` pods, e.g. example jobs) with no node, how many were checked, and what was not."""
    pods, unchecked = plan_pods(resources)
    nodes = node_templates(resources, resolved)
    return unschedulable([*pods, *extra], nodes), len(pods) + len(extra), unchecked


def add_schedulability(resources: Sequence[RecordedResource], resolved: ResolvedCluster, summary: dict[str, Any],
                       report: PolicyReport) -> None:
    """Add a Kubernetes stack's summary.schedulability and its violations."""
    found, checked, unchecked = stack_findings(resources, resolved)
    summary["schedulability"] = {"pods_checked": checked, "not_checked": unchecked,
                                 "unschedulable": [finding.to_json() for finding in found]}
    added = [Violation(SCHEDULABLE, "mandatory", finding.origin, finding.message) for finding in found]
    report.violations = sorted([*report.violations, *added], key=lambda v: (v.policy, v.urn, v.message, v.level))
