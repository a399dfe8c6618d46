"""The EKS managed add-ons' versions per Kubernetes minor (eks_addons.yaml), each with its source, or null with how
to read it: the add-ons a `scheduler: kubernetes` cluster on AWS runs in place of the self-managed ones."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from ..yaml_model import StrictModel, load_yaml_model

ADDONS_FILE = Path(__file__).parent / "eks_addons.yaml"
# The add-ons every cluster runs, in the order they are created.
ADDON_NAMES = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")


class AddonPin(StrictModel):
    """One add-on's version for one Kubernetes minor."""

    version: str | None = Field(..., pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$",
                                description="EKS add-on version (vX.Y.Z-eksbuild.N); null: none citable")
    source: str | None = Field(None, description="where the version was read")
    unconfirmed: str | None = Field(None, description="version null: how to read it before a deploy")

    @model_validator(mode="after")
    def _version_has_a_source(self) -> AddonPin:
        if self.version is not None and not self.source:
            raise ValueError("version needs source: never a version nobody can trace")
        if self.version is None and not self.unconfirmed:
            raise ValueError("version is null: say in `unconfirmed` how to read it")
        return self


class EksAddons(StrictModel):
    kubernetes: dict[str, dict[str, AddonPin]] = Field(..., description="Kubernetes minor -> add-on name -> pin")

    @model_validator(mode="after")
    def _every_addon_per_minor(self) -> EksAddons:
        for minor, pins in self.kubernetes.items():
            if set(pins) != set(ADDON_NAMES):
                raise ValueError(f"kubernetes.{minor}: list exactly {', '.join(ADDON_NAMES)}")
        return self

    def for_minor(self, minor: str) -> dict[str, AddonPin]:
        """The add-ons of a Kubernetes minor in creation order (KeyError naming the file when it has none)."""
        if minor not in self.kubernetes:
            raise KeyError(f"gpufleet/catalog/eks_addons.yaml has no add-on versions for Kubernetes {minor} "
                           f"(listed: {', '.join(sorted(self.kubernetes))})")
        return {name: self.kubernetes[minor][name] for name in ADDON_NAMES}


@lru_cache(maxsize=1)
def load_eks_addons(path: Path = ADDONS_FILE) -> EksAddons:
    """eks_addons.yaml, validated; a malformed file raises SpecInvalid naming every field."""
    return load_yaml_model(path, EksAddons)
