"""The lock's pins for the in-cluster components, and the refusal of a real deploy whose images lack a digest."""

from __future__ import annotations

from collections.abc import Iterable

from gpufleet.lock import load_lock
from gpufleet.lock.kubernetes_components import KubernetesComponents

from .. import runtime
from .manifests import Obj, containers

LOCK_FIELD = "images/lock.yaml kubernetes_components"


def component_pins() -> KubernetesComponents:
    """The lock's kubernetes_components (ValueError naming the field when the lock has none)."""
    pins = load_lock().kubernetes_components
    if pins is None:
        raise ValueError(f"{LOCK_FIELD} is missing: the in-cluster components are pinned there")
    return pins


def images_of(objects: Iterable[Obj]) -> set[str]:
    """Every container image the workloads among `objects` run."""
    return {container["image"] for obj in objects if "template" in obj.get("spec", {})
            for container in containers(obj)}


def refuse_unconfirmed(objects: Iterable[Obj], pins: KubernetesComponents, also: Iterable[str] = ()) -> None:
    """Stop a real deploy that would run an image the lock pins by tag only (a preview warns); the offline plan goes on
    (the image shows by tag and an advisory rule names it), as an unbaked node image does. `also`: reasons for
    images an operator pulls that no pod spec of ours names (the GPU Operator's driver container)."""
    notes = pins.unconfirmed_images()
    missing = sorted(image for image in images_of(objects) if image in notes)
    extra = list(also)
    if (not missing and not extra) or runtime.running_offline():
        return
    reasons = "; ".join([*(f"{image}: {notes[image]}" for image in missing), *extra])
    missing += [reason.split(":")[0] for reason in extra]
    runtime.refuse_unread(
        f"{LOCK_FIELD}: {len(missing)} image(s) have no digest, so nothing was created: {reasons}. Read each with "
        "`gpufleet lock resolve --only images` (or pin a cited digest in the lock), then run this again (`gpufleet "
        "plan` shows the cluster offline meanwhile)"
    )
