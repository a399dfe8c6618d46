"""MIG facts per GPU (mig.yaml): whether the GPU has MIG, and the mig-parted configs it offers with the MIG devices
each creates on one GPU. The catalog rows name their GPU by model and memory; the facts are looked up by both, since
a profile's devices depend on the memory size (1g.5gb on an A100 40 GB, 1g.10gb on an A100 80 GB)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from ..yaml_model import StrictModel, load_yaml_model
from .model import Gpu

MIG_FILE = Path(__file__).parent / "mig.yaml"

# mig-parted's config names (`all-<device profile>`, `all-balanced`) and device profiles (`<slices>g.<GB>gb`).
CONFIG_NAME = r"^all-([1-7]g\.[0-9]+gb|balanced)$"
DEVICE_PROFILE = re.compile(r"^[1-7]g\.[0-9]+gb$")
# A MIG-capable GPU has at most 7 GPU instances (NVIDIA MIG user guide, Supported GPUs: max number of instances).
MAX_DEVICES_PER_GPU = 7


class MigGpu(StrictModel):
    """One GPU's MIG facts."""

    model: str = Field(..., description="as the catalog rows' gpu.model")
    memory_gb: float = Field(..., gt=0, description="as the catalog rows' gpu.memory_gb")
    mig: bool = Field(..., description="the GPU can be partitioned with MIG")
    source: str = Field(..., min_length=3, description="where the facts were read")
    profiles: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="mig-parted config name -> the MIG devices it creates on one GPU"
    )

    @field_validator("profiles")
    @classmethod
    def _layouts(cls, value: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        for name, devices in value.items():
            if not re.fullmatch(CONFIG_NAME, name):
                raise ValueError(f"{name!r} is not a mig-parted config name like all-1g.10gb or all-balanced")
            if not devices or not all(DEVICE_PROFILE.fullmatch(p) and n >= 1 for p, n in devices.items()):
                raise ValueError(f"{name}: list device profiles like 1g.10gb with a count of at least 1")
            if sum(devices.values()) > MAX_DEVICES_PER_GPU:
                raise ValueError(f"{name}: more than {MAX_DEVICES_PER_GPU} MIG devices on one GPU")
        return value

    @model_validator(mode="after")
    def _profiles_only_with_mig(self) -> MigGpu:
        if self.mig != bool(self.profiles):
            raise ValueError("a GPU with mig: true lists its profiles; one with mig: false lists none")
        return self

    def devices(self, profile: str) -> dict[str, int] | None:
        """The MIG devices `profile` creates on one GPU, largest first (the order they are created in, so the
        smaller ones fill the slices the larger leave); None when the GPU does not offer it."""
        layout = self.profiles.get(profile)
        if layout is None:
            return None
        return dict(sorted(layout.items(), key=lambda item: (-_slices(item[0]), item[0])))


def _slices(device_profile: str) -> int:
    return int(device_profile.split("g.", 1)[0])


class MigFacts(StrictModel):
    gpus: list[MigGpu]

    @model_validator(mode="after")
    def _each_gpu_once(self) -> MigFacts:
        keys = [(g.model, g.memory_gb) for g in self.gpus]
        repeated = sorted({f"{m} {gb:g} GB" for m, gb in keys if keys.count((m, gb)) > 1})
        if repeated:
            raise ValueError(f"listed twice: {', '.join(repeated)}")
        return self

    def of(self, gpu: Gpu) -> MigGpu | None:
        """The facts of a catalog row's GPU; None when mig.yaml lacks it (the catalog test fails then)."""
        return next((g for g in self.gpus if g.model == gpu.model and g.memory_gb == gpu.memory_gb), None)

    def strategy(self, profile: str) -> str | None:
        """How the device plugin exposes `profile` (k8s-device-plugin README, MIG_STRATEGY): `single` where it
        creates one kind of MIG device on every GPU that offers it (advertised as nvidia.com/gpu), `mixed` where it
        creates several (nvidia.com/mig-<profile> each); None when no GPU offers it."""
        kinds = [len(g.profiles[profile]) for g in self.gpus if profile in g.profiles]
        if not kinds:
            return None
        return "single" if max(kinds) == 1 else "mixed"


@lru_cache(maxsize=1)
def load_mig_facts(path: Path = MIG_FILE) -> MigFacts:
    """mig.yaml, validated; a malformed file raises SpecInvalid naming every field."""
    return load_yaml_model(path, MigFacts)
