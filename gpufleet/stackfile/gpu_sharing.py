"""`node_groups[].gpu_sharing`: how a group's GPUs are shared between workloads.

none: whole GPUs (the default). mig: every GPU partitioned by one of the mig-parted configs its GPU offers
(gpufleet/catalog/mig.yaml), applied at each boot before the node check. time-slicing: the Kubernetes device
plugin hands each GPU out `replicas` times (no isolation). memory-isolated: Alibaba Cloud's cGPU on ACK (the
`ack-ai-installer` component): pods share a GPU's compute, each with its own slice of GPU memory. Which groups may use
which mode is checked against the catalog in sharing_checks.py (and ack_checks.py on ACK).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..catalog.mig import CONFIG_NAME
from ..yaml_model import StrictModel

SharingMode = Literal["none", "mig", "time-slicing", "memory-isolated"]


class GpuSharing(StrictModel):
    """How the group's GPUs are shared."""

    mode: SharingMode = Field(
        "none", description="none (whole GPUs) | mig (partition each GPU) | time-slicing (Kubernetes only) | "
                "memory-isolated (ACK's cGPU: shared compute, isolated GPU memory; ACK only)"
    )
    mig_profile: str | None = Field(
        None,
        pattern=CONFIG_NAME,
        description="mig: the mig-parted config every GPU of the group gets, e.g. all-1g.10gb or all-balanced "
        "(`gpufleet catalog --format json` lists each GPU's gpu.mig_profiles)",
    )
    # The device plugin refuses fewer than 2 (NVIDIA/k8s-device-plugin api/config/v1/replicas.go: "number of
    # replicas must be >= 2").
    replicas: int | None = Field(
        None, ge=2, strict=True, description="time-slicing: how many workloads share each GPU (2 or more)"
    )

    @model_validator(mode="after")
    def _settings_of_the_mode(self) -> GpuSharing:
        if self.mode == "mig" and self.mig_profile is None:
            raise ValueError("mode mig needs mig_profile, e.g. all-1g.10gb (the GPU's profiles: `gpufleet catalog`)")
        if self.mode == "time-slicing" and self.replicas is None:
            raise ValueError("mode time-slicing needs replicas: how many workloads share each GPU (2 or more)")
        if self.mig_profile is not None and self.mode != "mig":
            raise ValueError(f"mig_profile applies to mode mig only, not {self.mode}; remove it")
        if self.replicas is not None and self.mode != "time-slicing":
            raise ValueError(f"replicas applies to mode time-slicing only, not {self.mode}; remove it")
        return self

    def in_cluster_fields(self) -> dict[str, str | int | None]:
        """The sharing fields of components.kubernetes.InClusterGroup (sharing_mode, mig_profile,
        time_slicing_replicas), as the cluster's in-cluster objects read them."""
        return {"sharing_mode": self.mode, "mig_profile": self.mig_profile, "time_slicing_replicas": self.replicas}
