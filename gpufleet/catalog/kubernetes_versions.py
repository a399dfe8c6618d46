"""The Kubernetes minor versions each cloud's managed Kubernetes offers (kubernetes_versions.yaml), with the dates
their standard and extended support end, and what a stack on one of them should be told on a given day."""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from ..yaml_model import StrictModel, load_yaml_model

VERSIONS_FILE = Path(__file__).parent / "kubernetes_versions.yaml"
# A minor version as scheduler.version writes it (gpufleet/stackfile/scheduler.py; the catalog does not import the
# stack model, which imports the catalog's readers through its checks).
MINOR_VERSION = r"^1\.[0-9]{1,2}$"
# How long before standard support ends the plan starts saying so. EKS announces the end at least 60 days ahead
# (EKS user guide, kubernetes-versions, "Amazon EKS version FAQs").
WARN_BEFORE = timedelta(days=60)


class KubernetesVersion(StrictModel):
    """One minor version on one cloud."""

    version: str = Field(..., pattern=MINOR_VERSION)
    released: date = Field(..., description="the cloud's release of this minor version")
    standard_support_ends: date
    extended_support_ends: date | None = Field(..., description="after it the cloud upgrades the control plane and "
                                                                "creates no new cluster on the version; null where the "
                                                                "cloud sells no extended support (ACK)")
    source: str = Field(..., description="a key of `sources`")

    @model_validator(mode="after")
    def _dates_in_order(self) -> KubernetesVersion:
        if not self.released < self.standard_support_ends < (self.extended_support_ends or date.max):
            raise ValueError("needs released < standard_support_ends < extended_support_ends")
        return self

    def support_warning(self, cloud: str, today: date) -> str | None:
        """What a stack on this version should hear on `today`: past standard support (extended support costs more
        per cluster-hour), within WARN_BEFORE of it, or past extended support; None while comfortably supported."""
        name = f"Kubernetes {self.version} on {cloud}"
        if self.extended_support_ends is None:
            return self._support_warning_without_extension(name, today)
        if today >= self.extended_support_ends:
            return (f"{name}: extended support ended on {self.extended_support_ends}; the cloud creates no new "
                    "cluster on it and upgrades existing control planes: move scheduler.version to a newer version")
        if today >= self.standard_support_ends:
            return (f"{name}: standard support ended on {self.standard_support_ends}; the cluster runs on extended "
                    f"support (extra cost per cluster-hour) until {self.extended_support_ends}: upgrade "
                    "scheduler.version")
        if today >= self.standard_support_ends - WARN_BEFORE:
            days = (self.standard_support_ends - today).days
            return (f"{name}: standard support ends on {self.standard_support_ends} (in {days} days), then "
                    "extended support costs extra per cluster-hour: plan the upgrade of scheduler.version")
        return None

    def _support_warning_without_extension(self, name: str, today: date) -> str | None:
        if today >= self.standard_support_ends:
            return (f"{name}: support ended on {self.standard_support_ends} and the cloud sells no extended support: "
                    "move scheduler.version to a newer version")
        if today >= self.standard_support_ends - WARN_BEFORE:
            days = (self.standard_support_ends - today).days
            return (f"{name}: support ends on {self.standard_support_ends} (in {days} days), with no extended "
                    "support after it: plan the upgrade of scheduler.version")
        return None


class KubernetesVersions(StrictModel):
    sources: dict[str, str] = Field(..., min_length=1, description="source key -> where the dates were read")
    versions: dict[str, list[KubernetesVersion]] = Field(..., description="cloud -> the minor versions it offers")

    @model_validator(mode="after")
    def _sources_named_versions_once(self) -> KubernetesVersions:
        for cloud, listed in self.versions.items():
            names = [v.version for v in listed]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"{cloud}: listed twice: {', '.join(repeated)}")
            unknown = sorted({v.source for v in listed} - set(self.sources))
            if unknown:
                raise ValueError(f"{cloud}: source {', '.join(unknown)} is not a key of sources")
        return self

    def offered(self, cloud: str) -> list[str]:
        """The cloud's minor versions, newest first; [] for a cloud the table has none for."""
        return sorted((v.version for v in self.versions.get(cloud, [])),
                      key=lambda v: tuple(int(p) for p in v.split(".")), reverse=True)

    def of(self, cloud: str, version: str) -> KubernetesVersion | None:
        return next((v for v in self.versions.get(cloud, []) if v.version == version), None)


@lru_cache(maxsize=4)
def load_kubernetes_versions(path: Path = VERSIONS_FILE) -> KubernetesVersions:
    """kubernetes_versions.yaml, validated; a malformed file raises SpecInvalid naming every field."""
    return load_yaml_model(path, KubernetesVersions)
