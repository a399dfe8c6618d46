"""The lock as a run uses it: each in-cluster image the lock pins by tag alone takes the digest `lock resolve` read
for it (images/lock.resolved.yaml), with that read as its source, and each download the lock leaves to its GitHub
release's digest (`release:`) takes the sha256 GitHub published, as recorded (the bake checks the file against it).
A digest the lock cites from a document stays: a registry answering otherwise is a finding of `images check`
(gpufleet.lock.fact_status), never a silent switch."""

from __future__ import annotations

from .facts import ResolvedFacts
from .kubernetes_components import ImagePin
from .model import Lock, Profile


def _pinned(image: ImagePin, facts: ResolvedFacts) -> ImagePin:
    fact = facts.images.get(image.image)
    if image.digest is not None or fact is None:
        return image
    return image.model_copy(update={"digest": fact.digest, "unconfirmed": None,
                                    "digest_source": f"{fact.source} (read {fact.read_at.date().isoformat()} by "
                                                     "gpufleet lock resolve)"})


def _release_sha256s(profile: Profile, facts: ResolvedFacts) -> Profile:
    """The profile with its Slurm downloads that name a GitHub release (and no sha256) carrying the digest GitHub
    published for them, where a resolve recorded one."""
    pins = profile.slurm
    if pins is None:
        return profile
    filled = {name: component.model_copy(update={"sha256": fact.published.sha256, "unconfirmed": None})
              for name, component in pins.downloads().items()
              if component.release and component.sha256 is None and component.url
              and (fact := facts.downloads.get(component.url)) is not None and fact.published is not None}
    return profile.model_copy(update={"slurm": pins.model_copy(update=filled)}) if filled else profile


def with_resolved_digests(lock: Lock, facts: ResolvedFacts) -> Lock:
    """The lock carrying `facts` (Lock.resolved), its tag-only image pins and release downloads completed from
    them."""
    if facts.downloads:
        lock = lock.model_copy(update={"profiles": {name: _release_sha256s(profile, facts)
                                                    for name, profile in lock.profiles.items()}})
    pins = lock.kubernetes_components
    if pins is not None and facts.images:
        components = {name: component.model_copy(update={"images": {key: _pinned(image, facts)
                                                                     for key, image in component.images.items()}})
                      for name, component in pins if name != "node_check"}
        lock = lock.model_copy(update={"kubernetes_components": pins.model_copy(update=components)})
    lock._resolved = facts
    return lock
