"""What `images check` says about the in-cluster pins (the lock's kubernetes_components): every image pinned by tag
only is reported (a real run refuses it: components/kubernetes/pins.py); the GPU Operator's driver container of
each AKS stack must be the one pinned: <lock profile's driver>-<Ubuntu release of AKS nodes at the stack's minor>; the
driver each ACK stack's pools pin by label must be one ACK's list names (gpufleet/catalog/ack.yaml), or its nodes run
ACK's default driver instead.

Loads no Pulumi: the components (components/kubernetes/gpu_operator.py) read the node OS and the driver image here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.ack import load_ack_facts
from .check import LockProblem
from .model import Lock

FIELD = "kubernetes_components"
DRIVER_FIELD = f"{FIELD}.gpu_operator.images.driver"
# The driver container's tag is <driver>-<os><version>; the operator appends the OS suffix from NFD's os_release
# labels. AKS's `Ubuntu` OS SKU runs Ubuntu 22.04 for Kubernetes 1.25-1.34 and 24.04 from 1.35
# (docs.azure.cn/zh-cn/aks/upgrade-os-version), 26.04 from 1.38 (Azure/AKS release 2026-10-25).
UBUNTU_OF_MINOR = {"1.34": "ubuntu22.04", "1.35": "ubuntu24.04", "1.36": "ubuntu24.04", "1.37": "ubuntu24.04"}


def node_os(minor: str) -> str:
    """The Ubuntu release AKS nodes of a Kubernetes minor run (the driver containers' tag suffix)."""
    if minor not in UBUNTU_OF_MINOR:
        raise ValueError(f"kubernetes version {minor}: the Ubuntu release of its AKS nodes is not known here "
                         f"(known: {', '.join(UBUNTU_OF_MINOR)})")
    return UBUNTU_OF_MINOR[minor]


def driver_image(driver: str, minor: str) -> str:
    """The driver container image the GPU Operator pulls for this driver on the cluster's node OS."""
    return f"nvcr.io/nvidia/driver:{driver}-{node_os(minor)}"


@dataclass(frozen=True)
class KubernetesStack:
    """A shipped AKS stack as the driver check needs it."""

    name: str
    profile: str
    minor: str


def unpinned_notes(lock: Lock) -> list[LockProblem]:
    """Each in-cluster image pinned by tag only, with how to read its digest (reported, never failing)."""
    pins = lock.kubernetes_components
    if pins is None:
        return []
    notes = [LockProblem(FIELD, f"{FIELD}.{key}.digest", f"{pin.image}: no digest: {pin.unconfirmed}")
             for key, pin in pins.unconfirmed()]
    check = pins.node_check
    if check.image is None or check.digest is None:
        notes.append(LockProblem(FIELD, f"{FIELD}.node_check", f"unpublished or without a digest: {check.unconfirmed}"))
    return notes


def driver_problems(lock: Lock, stacks: list[KubernetesStack]) -> list[LockProblem]:
    """Each AKS stack whose driver container (its profile's driver on its minor's Ubuntu) the lock does not pin."""
    pins = lock.kubernetes_components
    problems = []
    for stack in stacks:
        profile = lock.profiles.get(stack.profile)
        if profile is None:
            continue  # the stack names no profile of this lock: its own plan says so
        if pins is None or "driver" not in pins.gpu_operator.images:
            problems.append(LockProblem(stack.profile, DRIVER_FIELD, f"stack {stack.name}: no driver container is "
                                        "pinned; AKS nodes get the driver from the GPU Operator's driver container"))
            continue
        try:
            wanted = driver_image(profile.driver, stack.minor)
        except ValueError as unknown:
            problems.append(LockProblem(stack.profile, DRIVER_FIELD, f"stack {stack.name}: {unknown}"))
            continue
        pinned = pins.gpu_operator.images["driver"].image
        if pinned != wanted:
            problems.append(LockProblem(stack.profile, DRIVER_FIELD, f"stack {stack.name}: its nodes pull {wanted} "
                                        f"(driver {profile.driver} on Kubernetes {stack.minor}), the lock pins "
                                        f"{pinned}: pin that tag and its digest"))
    return problems


def ack_driver_problems(lock: Lock, stacks: list[KubernetesStack]) -> list[LockProblem]:
    """Each ACK stack whose profile's driver ACK's driver list does not name: its pools' label would get ACK's
    default driver, not the lock's. An installed_by: ack profile's own check (check_lock) already says so."""
    facts = load_ack_facts()
    problems = []
    for stack in stacks:
        profile = lock.profiles.get(stack.profile)
        unlisted = facts.unlisted_driver(profile.driver) if profile is not None and profile.baked else None
        if unlisted:
            problems.append(LockProblem(stack.profile, "driver", f"stack {stack.name}: {unlisted}"))
    return problems
