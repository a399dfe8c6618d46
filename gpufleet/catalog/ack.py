"""What ACK offers GPU node pools (ack.yaml): the NVIDIA driver versions its driver label installs, the instance
families with memory-isolated sharing (cGPU) and the oldest Kubernetes the eRDMA controller runs on, each with its
source."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from ..yaml_model import StrictModel, load_yaml_model

ACK_FILE = Path(__file__).parent / "ack.yaml"


class SourcedList(StrictModel):
    source: str = Field(..., description="a key of `sources`")


class AckDrivers(SourcedList):
    versions: list[str] = Field(..., min_length=1, description="driver versions the pool label installs")


class AckFamilies(SourcedList):
    families: list[str] = Field(..., min_length=1, description="ECS instance families, e.g. gn7i")


class AckErdma(SourcedList):
    min_kubernetes: str = Field(..., pattern=r"^1\.[0-9]{1,2}$", description="oldest Kubernetes minor it runs on")

    def runs_on(self, version: str) -> bool:
        return int(version.split(".")[1]) >= int(self.min_kubernetes.split(".")[1])


class AckFacts(StrictModel):
    sources: dict[str, str] = Field(..., min_length=1, description="source key -> where the list was read")
    drivers: AckDrivers
    cgpu: AckFamilies
    erdma: AckErdma

    @model_validator(mode="after")
    def _sources_known(self) -> AckFacts:
        unknown = sorted({self.drivers.source, self.cgpu.source, self.erdma.source} - set(self.sources))
        if unknown:
            raise ValueError(f"source {', '.join(unknown)} is not a key of sources")
        return self

    def source(self, listed: SourcedList) -> str:
        return self.sources[listed.source]

    def unlisted_driver(self, driver: str) -> str | None:
        """Why ACK's driver label cannot be trusted to install `driver`, or None where ACK's list names it."""
        if driver in self.drivers.versions:
            return None
        return (f"NVIDIA driver {driver} is not in ACK's driver list as gpufleet/catalog/ack.yaml read it "
                f"({self.source(self.drivers)}: {', '.join(self.drivers.versions)}); for an unlisted version ACK "
                "installs its default driver instead. A real run refuses the stack until ack.yaml lists it from ACK's "
                "current page, or `image` names a lock profile whose driver it lists (installed_by: ack)")


def instance_family(instance_type: str) -> str:
    """ecs.gn7i-c8g1.2xlarge -> gn7i; ecs.ebmgn8v.48xlarge -> ebmgn8v (ECS names: ecs.<family>[-<variant>].<size>)."""
    return instance_type.split(".")[1].split("-")[0] if instance_type.count(".") >= 2 else instance_type


@lru_cache(maxsize=4)
def load_ack_facts(path: Path = ACK_FILE) -> AckFacts:
    """ack.yaml, validated; a malformed file raises SpecInvalid naming every field."""
    return load_yaml_model(path, AckFacts)
