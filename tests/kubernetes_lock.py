"""A lock with more profiles: Kubernetes node profiles, for tests of the scheduler checks against versions the shipped
lock does not carry (the shipped Kubernetes profile with its `kubernetes.version` set to another minor), and VM
profiles at another driver."""

from __future__ import annotations

import importlib

import pytest

SHIPPED_PROFILE = "cuda12.8-r580-eks1.35"


def with_kubernetes_profiles(monkeypatch: pytest.MonkeyPatch, profiles: dict[str, str]) -> None:
    """Make load_lock() answer the shipped lock plus `profiles` (name -> Kubernetes minor version)."""
    lock_package = importlib.import_module("gpufleet.lock")
    shipped = lock_package.load_lock()
    base = shipped.profiles[SHIPPED_PROFILE]
    assert base.kubernetes is not None

    def at(version: str):  # the shipped profile baked for another minor
        return base.model_copy(update={"kubernetes": base.kubernetes.model_copy(update={"version": version})})

    lock = shipped.model_copy(update={"profiles": {
        **shipped.profiles, **{name: at(version) for name, version in profiles.items()},
    }})
    monkeypatch.setattr(lock_package, "load_lock", lambda *args, **kwargs: lock)


def with_vm_profile(monkeypatch: pytest.MonkeyPatch, name: str, driver: str) -> None:
    """Make load_lock() answer the shipped lock plus VM profile `name`: the shipped cuda12.8-r580 with another driver
    (for checks that read only a profile's driver, like ACK's driver label)."""
    lock_package = importlib.import_module("gpufleet.lock")
    shipped = lock_package.load_lock()
    profile = shipped.profiles["cuda12.8-r580"].model_copy(update={"driver": driver})
    lock = shipped.model_copy(update={"profiles": {**shipped.profiles, name: profile}})
    monkeypatch.setattr(lock_package, "load_lock", lambda *args, **kwargs: lock)


def with_image_digests(monkeypatch: pytest.MonkeyPatch, digests: dict[tuple[str, str], str]) -> None:
    """Make the in-cluster components read the shipped lock with these images pinned by digest: (component, image key)
    -> digest, as `gpufleet lock resolve` would record them (components/kubernetes/pins.py reads the lock)."""
    pins_module = importlib.import_module("components.kubernetes.pins")
    shipped = importlib.import_module("gpufleet.lock").load_lock()
    components = shipped.kubernetes_components
    assert components is not None
    update = {}
    for component in {name for name, _ in digests}:
        pin = getattr(components, component)
        images = {key: image.model_copy(update={"digest": digests[(component, key)], "unconfirmed": None,
                                                "digest_source": "test: as `gpufleet lock resolve` records it"})
                  if (component, key) in digests else image for key, image in pin.images.items()}
        update[component] = pin.model_copy(update={"images": images})
    lock = shipped.model_copy(update={"kubernetes_components": components.model_copy(update=update)})
    monkeypatch.setattr(pins_module, "load_lock", lambda *args, **kwargs: lock)
