"""A lock with Kubernetes node profiles for tests of the scheduler checks and the plan's warnings.

The lock model's `kubernetes:` section is the node image's (a profile baked for one Kubernetes minor version); the
checks read it as `profile.kubernetes.version`. These profiles are the shipped VM profile with that section added,
so a test does not depend on which Kubernetes profiles images/lock.yaml ships.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest

VM_PROFILE = "cuda12.8-r580"


class KubernetesProfile:
    """A lock profile with a `kubernetes:` section for `version`; every other field is the base profile's."""

    def __init__(self, base: Any, version: str) -> None:
        self._base = base
        self.kubernetes = SimpleNamespace(version=version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


def with_kubernetes_profiles(monkeypatch: pytest.MonkeyPatch, profiles: dict[str, str]) -> None:
    """Make load_lock() answer the shipped lock plus `profiles` (name -> Kubernetes minor version)."""
    lock_package = importlib.import_module("gpufleet.lock")
    shipped = lock_package.load_lock()
    base = shipped.profiles[VM_PROFILE]
    lock = shipped.model_copy(update={"profiles": {
        **shipped.profiles, **{name: KubernetesProfile(base, version) for name, version in profiles.items()},
    }})
    monkeypatch.setattr(lock_package, "load_lock", lambda *args, **kwargs: lock)
