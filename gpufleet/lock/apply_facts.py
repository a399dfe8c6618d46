"""The lock as a run uses it: each in-cluster image the lock pins by tag alone takes the digest `lock resolve` read
for it (images/lock.resolved.yaml), with that read as its source. A digest the lock cites from a document stays: a
registry answering otherwise is a finding of `images check` (gpufleet.lock.fact_status), never a silent switch."""

from __future__ import annotations

from .facts import ResolvedFacts
from .kubernetes_components import ImagePin
from .model import Lock


def _pinned(image: ImagePin, facts: ResolvedFacts) -> ImagePin:
    fact = facts.images.get(image.image)
    if image.digest is not None or fact is None:
        return image
    return image.model_copy(update={"digest": fact.digest, "unconfirmed": None,
                                    "digest_source": f"{fact.source} (read {fact.read_at.date().isoformat()} by "
                                                     "gpufleet lock resolve)"})


def with_resolved_digests(lock: Lock, facts: ResolvedFacts) -> Lock:
    """The lock carrying `facts` (Lock.resolved), its tag-only image pins completed from them."""
    pins = lock.kubernetes_components
    if pins is not None and facts.images:
        components = {name: component.model_copy(update={"images": {key: _pinned(image, facts)
                                                                     for key, image in component.images.items()}})
                      for name, component in pins if name != "node_check"}
        lock = lock.model_copy(update={"kubernetes_components": pins.model_copy(update=components)})
    lock._resolved = facts
    return lock
