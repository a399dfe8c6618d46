"""`gpufleet images check`: the lock's own checks, plus every region a shipped stack boots in, and the in-cluster
pins: each image's digest or the note that it has none, and what each managed-Kubernetes stack's nodes run: an AKS
stack's driver container pinned, an ACK stack's driver one ACK's list names."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .stackfile import CLUSTER_KEY, IMAGES_KEY, SpecError, SpecInvalid, load_stack, stack_names, stack_path

if TYPE_CHECKING:
    from .lock.fact_status import FactFinding
    from .lock.in_cluster_pins import KubernetesStack
    from .lock.model import Lock


def shipped_stacks(stacks_dir: Path) -> dict[str, dict[str, Any]]:
    """Each shipped stack's config, by name, read once (YAML parsing is most of this command's time)."""
    return {name: load_stack(stack_path(stacks_dir, name), stacks_dir) for name in stack_names(stacks_dir)}


def regions_in_use(stacks: Mapping[str, Mapping[str, Any]]) -> dict[str, set[str]]:
    """cloud -> regions that the shipped stacks deploy clusters to or distribute images to."""
    used: dict[str, set[str]] = {}
    for config in stacks.values():
        cluster, images = config.get(CLUSTER_KEY), config.get(IMAGES_KEY)
        if isinstance(cluster, dict) and cluster.get("cloud") and cluster.get("region"):
            used.setdefault(cluster["cloud"], set()).add(cluster["region"])
        if isinstance(images, dict) and images.get("cloud"):
            used.setdefault(images["cloud"], set()).update(images.get("regions") or [])
    return used


def kubernetes_stacks(stacks: Mapping[str, Mapping[str, Any]], cloud: str,
                      profile: str | None = None) -> list[KubernetesStack]:
    """The shipped Kubernetes stacks on `cloud` (on `profile` when given). On AKS and ACK the nodes run the cloud's
    image and get the profile's driver from the GPU Operator (AKS) or the pool's driver label (ACK)."""
    from .lock.in_cluster_pins import KubernetesStack

    found = []
    for name, config in stacks.items():
        cluster = config.get(CLUSTER_KEY)
        if not isinstance(cluster, dict) or cluster.get("cloud") != cloud:
            continue
        scheduler = cluster.get("scheduler") or {}
        image, version = cluster.get("image"), scheduler.get("version")
        if scheduler.get("kind") == "kubernetes" and image and version and profile in (None, image):
            found.append(KubernetesStack(name, str(image), str(version)))
    return found


def images_report(
    stacks_dir: Path, on: date, profile: str | None = None, lock_file: Path | None = None
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """`gpufleet images check`: the lock's problems (failing the check) and its notes (reported, never failing it),
    from one read of the lock, the stacks and the resolved facts (parsing the stacks is most of this command's time)."""
    from .lock import DEFAULT_LOCK_PATH, load_lock

    lock = load_lock(lock_file or DEFAULT_LOCK_PATH)  # LockError is a SpecInvalid naming the file and fields
    if profile is not None and profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles))
        raise SpecInvalid([SpecError("--profile", f"unknown profile {profile!r}; images/lock.yaml has: {known}")])
    stacks = shipped_stacks(stacks_dir)
    findings = _fact_findings(lock, stacks, profile, on)
    return _problems(lock, stacks, findings, profile, on), _notes(lock, findings, profile, on)


def _problems(lock: Lock, stacks: Mapping[str, Mapping[str, Any]], findings: list[FactFinding],
              profile: str | None, on: date) -> list[dict[str, str]]:
    from .lock import check_lock
    from .lock.check import LockProblem, check_downloads
    from .lock.in_cluster_pins import ack_driver_problems, driver_problems

    problems = check_lock(lock, on, required_regions=regions_in_use(stacks), profile=profile)
    problems += [found for name in ([profile] if profile else sorted(lock.profiles))
                 for found in check_downloads(lock.profiles[name])]
    problems += driver_problems(lock, kubernetes_stacks(stacks, "azure", profile))
    problems += ack_driver_problems(lock, kubernetes_stacks(stacks, "alicloud", profile))
    problems += [LockProblem("resolved", f.field, f"{f.section}: {f.key}: {f.message}")
                 for f in findings if f.status == "different"]
    return [{"profile": p.profile, "field": p.field, "message": p.message} for p in problems]


def _fact_findings(lock: Lock, stacks: Mapping[str, Mapping[str, Any]], profile: str | None,
                   on: date) -> list[FactFinding]:
    """The lock's facts against what `lock resolve` recorded (images/lock.resolved.yaml): a record that contradicts
    the lock fails the check; one never read, or read over 90 days ago, is a note (only a network read gives it)."""
    from .lock.fact_status import fact_findings
    from .lock.needs import lock_needs, profile_needs
    from .lock_resolve import stack_managed_needs

    needs = profile_needs(lock.profiles[profile]) if profile else lock_needs(lock) + stack_managed_needs(stacks)
    return fact_findings(needs, lock.resolved, datetime.combine(on, time(), tzinfo=timezone.utc))


def _notes(lock: Lock, findings: list[FactFinding], profile: str | None, on: date) -> list[dict[str, str]]:
    """What the lock records as not known yet: e.g. a Kubernetes node image's kubelet before it was read off a bake,
    the unsupported branch of a driver ACK installs (installed_by: ack), and, unless one profile is checked, each
    in-cluster image without a digest (a real run refuses it)."""
    from .lock.check import LockProblem, lock_notes
    from .lock.in_cluster_pins import unpinned_notes

    notes = lock_notes(lock, profile, on) + ([] if profile else unpinned_notes(lock))
    notes += [LockProblem("resolved", f.field, f"{f.section}: {f.key}: {f.message}")
              for f in findings if f.status != "different"]
    return [{"profile": n.profile, "field": n.field, "message": n.message} for n in notes]
