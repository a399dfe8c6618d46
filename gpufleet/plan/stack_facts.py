"""The facts a planned stack relies on that `gpufleet lock resolve` has not read (or read otherwise than the lock
pins, or over 90 days ago), for the plan's summary: an image stack's bake (its profile's repositories, downloads and
base image), a Kubernetes cluster's managed versions and the in-cluster images its objects name. The same list a real
run refuses (gpufleet/program.py for image stacks; the components' refusals for clusters)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, time, timezone
from typing import Any

from ..lock import load_lock
from ..lock.fact_status import FactFinding, fact_findings
from ..lock.needs import ImageNeed, Need, image_needs, image_stack_needs, managed_needs
from ..stackfile.models import ClusterSpec, ImagesSpec

SERVICES = {"aws": "eks", "alicloud": "ack", "azure": "aks"}


def _cluster_needs(spec: ClusterSpec, resource_inputs: Iterable[dict[str, Any]]) -> list[Need]:
    """What a cluster's real run refuses while unread: an add-on version or in-cluster digest neither cited in the
    lock or catalog nor read, and ACK's full version (AKS takes a minor and keeps it, so its read is informative)."""
    from ..catalog.managed_addons import load_ack_addons, load_eks_addons

    scheduler = spec.scheduler
    if scheduler.kind != "kubernetes" or scheduler.version is None:
        return []
    service, minor = SERVICES[spec.cloud], scheduler.version
    catalog = {"eks": load_eks_addons, "ack": load_ack_addons}.get(service)
    pins = catalog().kubernetes.get(minor, {}) if catalog else {}
    names = tuple(name for name, pin in pins.items() if pin.version is None)
    needs = managed_needs(service, minor, names, spec.region, with_version=service == "ack")
    lock = load_lock()
    unpinned = {image.image for _, image in lock.kubernetes_components.unconfirmed()} \
        if lock.kubernetes_components else set()
    if not unpinned:
        return needs
    # The plan's inputs as one text (~2% of a plan), made only where an unconfirmed image may be named in them.
    inputs_text = json.dumps(list(resource_inputs), default=str)
    return needs + [need for need in image_needs(lock) if isinstance(need, ImageNeed) and need.reference in unpinned
                    and _names(inputs_text, need.reference)]


def _names(inputs_text: str, reference: str) -> bool:
    """Whether the plan's inputs pull `reference`: named whole in a pod spec, or (an operator's object:
    NVIDIADriver, NicClusterPolicy) by repository, image and a version the operator suffixes into this tag."""
    if reference in inputs_text:
        return True
    repository, tag = reference.rsplit(":", 1)
    folder, image = repository.rsplit("/", 1)
    parts = tag.split("-")
    versions = ("-".join(parts[:end]) for end in range(1, len(parts) + 1))
    return f'"{folder}"' in inputs_text and f'"{image}"' in inputs_text and any(
        f'"{version}"' in inputs_text for version in versions)


def stack_fact_findings(prepared: ClusterSpec | ImagesSpec, resource_inputs: Iterable[dict[str, Any]],
                        today: datetime | Any) -> list[FactFinding]:
    """Findings for one stack; `today` (a date) dates the staleness."""
    if isinstance(prepared, ImagesSpec):
        needs = image_stack_needs(load_lock(), prepared.profile, prepared.cloud, prepared.regions[0])
    else:
        needs = _cluster_needs(prepared, resource_inputs)
    now = datetime.combine(today, time(), tzinfo=timezone.utc) if not isinstance(today, datetime) else today
    return fact_findings(needs, load_lock().resolved, now)
