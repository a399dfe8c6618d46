"""Kubernetes images: every container names its image by digest, so a node pulls the bytes that were reviewed.

An image the lock pins by tag only (images/lock.yaml kubernetes_components, digest null with how to read it) plans
offline and is reported by the advisory rule; `pulumi up` refuses it in the program (components/kubernetes/pins.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..lock import lock_module
from ..meta import ADVISORY, MANDATORY, Config, Props, Rule, resource_rule
from ..props import is_unknown
from .workloads import WORKLOAD_TYPES, containers, pod_specs

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _images(resource_type: str, props: Props) -> list[tuple[str, str]]:
    """(container name, image) of every container whose image is known."""
    return [(str(c.get("name")), c["image"]) for spec in pod_specs(resource_type, props) for c in containers(spec)
            if isinstance(c.get("image"), str) and not is_unknown(c["image"])]


def _unconfirmed() -> dict[str, str] | str:
    """The lock's images pinned by tag only (image -> how to read its digest), or why the lock cannot be read."""
    lock = lock_module()
    try:
        pins = lock.load_lock().kubernetes_components
    except (lock.LockError, OSError) as exc:
        return f"images/lock.yaml could not be read ({exc})"
    return pins.unconfirmed_images() if pins is not None else {}


def check_digest_pinned(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    unpinned = [(name, image) for name, image in _images(resource_type, props) if not DIGEST.search(image)]
    if not unpinned:
        return
    known = _unconfirmed()
    for name, image in unpinned:
        if isinstance(known, dict) and image in known:
            continue  # the lock's own tag-only pin: kubernetes-image-digest-unconfirmed reports it
        reason = f" ({known}, so the lock's tag-only pins are unknown)" if isinstance(known, str) else ""
        yield (f"container {name!r} runs image {image!r} by tag{reason}: name it by digest "
               "(repository:tag@sha256:...), so every node pulls the same bytes")


def check_digest_unconfirmed(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    known = _unconfirmed()
    if not isinstance(known, dict):
        return
    for name, image in _images(resource_type, props):
        if image in known:
            yield (f"container {name!r} runs {image!r}, pinned in images/lock.yaml by tag only: the plan shows it, "
                   f"`pulumi up` refuses it until its digest is pinned; {known[image]}")


RULES: list[Rule] = [
    resource_rule(
        "kubernetes-image-digest-pinned",
        "Kubernetes workloads name every container image by digest (repository:tag@sha256:...).",
        MANDATORY,
        "kubernetes",
        WORKLOAD_TYPES,
        check_digest_pinned,
        checkov=("CKV_K8S_43",),
    ),
    resource_rule(
        "kubernetes-image-digest-unconfirmed",
        "Images the lock pins by tag only are reported with how to read their digest (a real run refuses them).",
        ADVISORY,
        "kubernetes",
        WORKLOAD_TYPES,
        check_digest_unconfirmed,
    ),
]
