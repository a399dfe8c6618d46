"""Warnings a plan carries about the stack's dated choices: the Kubernetes version's support window.

A plan is made on a day; the same stack planned later may be told its version has left standard support. The day
is passed in so a plan (and a test) can fix it.
"""

from __future__ import annotations

from datetime import date

from ..catalog.kubernetes_versions import load_kubernetes_versions
from ..stackfile.models import ClusterSpec


def plan_warnings(spec: ClusterSpec, today: date) -> list[str]:
    """What the plan's table and JSON (summary.warnings) say beside the cost: empty for a VM cluster or a version
    comfortably inside standard support."""
    scheduler = spec.scheduler
    if scheduler.kind != "kubernetes" or scheduler.version is None:
        return []
    version = load_kubernetes_versions().of(spec.cloud, scheduler.version)
    warning = version.support_warning(spec.cloud, today) if version is not None else None
    return [f"scheduler.version: {warning}"] if warning else []
