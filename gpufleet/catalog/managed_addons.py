"""Managed add-on versions per Kubernetes minor, each with its source or null with how to read it: the EKS add-ons
(eks_addons.yaml) in place of the self-managed ones, the ACK add-ons (ack_addons.yaml) of the network plugin, eRDMA,
GPU sharing and metrics. A null version plans offline and a real run refuses the cluster (`unpinned`)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, model_validator

from ..lock.facts import ResolvedFacts
from ..lock.loader import load_lock
from ..lock.needs import eks_release_key
from ..yaml_model import StrictModel, load_yaml_model

EKS_FILE = Path(__file__).parent / "eks_addons.yaml"
ACK_FILE = Path(__file__).parent / "ack_addons.yaml"


class AddonPin(StrictModel):
    """One add-on's version for one Kubernetes minor."""

    version: str | None = Field(..., description="the add-on version the cloud's API takes; null: none citable")
    source: str | None = Field(None, description="where the version was read")
    unconfirmed: str | None = Field(None, description="version null: how to read it before a deploy")

    @model_validator(mode="after")
    def _version_has_a_source(self) -> AddonPin:
        if self.version is not None and not self.source:
            raise ValueError("version needs source: never a version nobody can trace")
        if self.version is None and not self.unconfirmed:
            raise ValueError("version is null: say in `unconfirmed` how to read it")
        return self


class AddonCatalog(StrictModel):
    """Kubernetes minor -> add-on name -> pin; every minor lists exactly NAMES, versions in the cloud's form."""

    FILE: ClassVar[str]
    SERVICE: ClassVar[str]
    NAMES: ClassVar[tuple[str, ...]]
    VERSION: ClassVar[str]

    kubernetes: dict[str, dict[str, AddonPin]] = Field(..., description="Kubernetes minor -> add-on name -> pin")

    @model_validator(mode="after")
    def _every_addon_per_minor_in_the_clouds_form(self) -> AddonCatalog:
        for minor, pins in self.kubernetes.items():
            if set(pins) != set(self.NAMES):
                raise ValueError(f"kubernetes.{minor}: list exactly {', '.join(self.NAMES)}")
            for name, pin in pins.items():
                if pin.version is not None and not re.fullmatch(self.VERSION, pin.version):
                    raise ValueError(f"kubernetes.{minor}.{name}.version: {pin.version!r} does not match "
                                     f"{self.VERSION}")
        return self

    def with_resolved(self, facts: ResolvedFacts) -> AddonCatalog:
        """Each null version completed by the one `gpufleet lock resolve` read (<SERVICE>/<minor>/addon/<name>); a
        version this file cites stays (a different read is a finding of `images check`)."""
        def pinned(minor: str, name: str, pin: AddonPin) -> AddonPin:
            fact = facts.managed.get(f"{self.SERVICE}/{minor}/addon/{name}")
            if pin.version is not None or fact is None:
                return pin
            return AddonPin(version=fact.version, source=f"{fact.source} (read {fact.read_at.date().isoformat()} "
                            "by gpufleet lock resolve)")
        return self.model_copy(update={"kubernetes": {
            minor: {name: pinned(minor, name, pin) for name, pin in pins.items()}
            for minor, pins in self.kubernetes.items()}})

    def for_minor(self, minor: str) -> dict[str, AddonPin]:
        """The add-ons of a Kubernetes minor in NAMES order (KeyError naming the file when it has none)."""
        if minor not in self.kubernetes:
            raise KeyError(f"{self.FILE} has no add-on versions for Kubernetes {minor} "
                           f"(listed: {', '.join(sorted(self.kubernetes))})")
        return {name: self.kubernetes[minor][name] for name in self.NAMES}

    def unpinned(self, minor: str, names: tuple[str, ...] | list[str]) -> str | None:
        """Why a real run must stop: the add-ons of `names` without a version for `minor`, each with how to read
        it; None when every one is pinned."""
        pins = self.for_minor(minor)
        missing = {name: pins[name].unconfirmed for name in names if pins[name].version is None}
        if not missing:
            return None
        reasons = "; ".join(f"{name}: {why}" for name, why in missing.items())
        return (f"{self.FILE} kubernetes.{minor}: {len(missing)} add-on(s) have no version, so nothing was created: "
                f"{reasons}. Pin each version there, then run this again (`gpufleet plan` shows the cluster "
                "meanwhile)")


class EksAddons(AddonCatalog):
    FILE = "gpufleet/catalog/eks_addons.yaml"
    SERVICE = "eks"
    # The add-ons every cluster runs, in the order they are created.
    NAMES = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
    VERSION = r"v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+"


class AckAddons(AddonCatalog):
    FILE = "gpufleet/catalog/ack_addons.yaml"
    SERVICE = "ack"
    # In install order: the network plugin of the create request, then what the groups and monitoring need.
    NAMES = ("terway-controlplane", "terway-eniip", "ack-erdma-controller", "ack-ai-installer", "ack-arms-prometheus")
    # ACK's add-on versions, with or without a leading v and a build suffix.
    VERSION = r"v?[0-9]+\.[0-9]+\.[0-9]+([-.+][0-9A-Za-z.-]+)?"


@lru_cache(maxsize=1)
def load_eks_addons(path: Path = EKS_FILE) -> EksAddons:
    """eks_addons.yaml, validated; a malformed file raises SpecInvalid naming every field."""
    return load_yaml_model(path, EksAddons).with_resolved(load_lock().resolved)


@lru_cache(maxsize=1)
def load_ack_addons(path: Path = ACK_FILE) -> AckAddons:
    """ack_addons.yaml, validated; a malformed file raises SpecInvalid naming every field."""
    return load_yaml_model(path, AckAddons).with_resolved(load_lock().resolved)


def resolved_kubernetes_version(service: str, minor: str) -> str | None:
    """The full Kubernetes version `gpufleet lock resolve` read for a managed service's minor (ACK stores
    1.36.x-aliyun.n: a minor alone would diff on every later `up`); None until it was read."""
    fact = load_lock().resolved.managed.get(f"{service}/{minor}/kubernetes")
    return fact.version if fact else None


def resolved_eks_release(minor: str) -> str | None:
    """The EKS system group's AMI release `gpufleet lock resolve` read for the minor (lock.needs.eks_release_need);
    None until it was read."""
    fact = load_lock().resolved.managed.get(eks_release_key(minor))
    return fact.version if fact else None


def addon_config_problems(service: str, minor: str, name: str, config: dict[str, Any]) -> list[str]:
    """Where `config` breaks the configuration schema `gpufleet lock resolve` read for the add-on (ACK's ListAddons
    config_schema), each with its path; empty where it fits or no schema was read."""
    fact = load_lock().resolved.managed.get(f"{service}/{minor}/addon/{name}")
    if fact is None or not fact.config_schema:
        return []
    from jsonschema.validators import validator_for

    validator = validator_for(fact.config_schema)(fact.config_schema)
    return [f"{'.'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
            for error in sorted(validator.iter_errors(config), key=lambda error: list(error.absolute_path))]
