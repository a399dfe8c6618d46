"""A VM profile's `slurm:` section: Slurm, munge, enroot and pyxis at the versions the image carries.

A `scheduler: slurm` cluster boots its head node and nodes from the cluster's baked image, so the image holds the
daemons (images/install/slurm.sh installs them, services off until the node bootstrap starts them). Slurm comes
from SchedMD's own Debian packaging (slurm-smd-*) as Microsoft publishes it for Ubuntu 22.04 in a signed apt
repository; munge from Ubuntu's archive the image already trusts; enroot as NVIDIA's release .debs; pyxis built on
the image against the installed Slurm headers (its README: a SPANK plugin must be compiled against the Slurm
release it runs under). `gpufleet lock resolve` reads each from its source (gpufleet.lock.needs.slurm_needs).
"""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from ..yaml_model import StrictModel
from .download_pins import FabricComponent
from .power_sdk import SDK_ROOTS, WheelPin, closure_problems

# The Slurm packages the image installs, all at the one version: the daemons of both roles (a node image serves the
# head node and the compute nodes), the clients, and the headers pyxis builds against.
SLURM_PACKAGES = ("slurm-smd", "slurm-smd-client", "slurm-smd-dev", "slurm-smd-slurmctld", "slurm-smd-slurmd")
# munge from Ubuntu's archive: the daemon and its library, at one version.
MUNGE_PACKAGES = ("libmunge2", "munge")
# enroot's GPU hook runs nvidia-container-cli (NVIDIA/enroot conf/hooks/98-nvidia.sh; doc/requirements.md:
# libnvidia-container-tools >= 1.0): without it a container job sees no GPU.
CONTAINER_CLI_PACKAGES = ("libnvidia-container-tools", "libnvidia-container1")


class AptRepositoryPins(StrictModel):
    """Packages pinned to exact versions from one signed apt repository (`deb URL SUITE COMPONENT`)."""

    url: str = Field(..., pattern=r"^https?://\S+$", description="the repository (apt's URI)")
    suite: str = Field(..., min_length=1, description="the dists/ suite, e.g. stable or jammy-updates")
    component: str = Field("main", min_length=1, description="the component the packages are indexed under")
    key_url: str = Field(..., pattern=r"^https://\S+$", description="where `lock resolve` reads the signing key")
    key_fingerprint: str = Field(..., pattern=r"^[0-9A-F]{40}$", description="the primary key that signs InRelease")
    apt: dict[str, str] = Field(..., min_length=1, description="package -> exact version")


class SlurmPins(StrictModel):
    """What a VM image carries for `scheduler: slurm`."""

    version: str = Field(..., pattern=r"^[0-9]{2}\.[0-9]{2}\.[0-9]+$", description="the Slurm release, e.g. 25.11.5")
    packages: AptRepositoryPins = Field(..., description="SchedMD's slurm-smd packages at <version>-<revision>")
    munge: AptRepositoryPins = Field(..., description="munge and libmunge2 from the image's own Ubuntu archive")
    container_cli: AptRepositoryPins = Field(..., description="nvidia-container-cli for enroot's GPU hook")
    enroot: FabricComponent = Field(..., description="NVIDIA's enroot .deb")
    enroot_caps: FabricComponent = Field(..., description="enroot+caps: lets unprivileged users import images")
    pyxis: FabricComponent = Field(..., description="the pyxis source tarball, built on the image")
    power_sdk: dict[str, list[WheelPin]] = Field(
        default_factory=dict, description="cloud -> the wheels of its SDK that the head node's power program "
        "(gpufleet-slurm-power) calls the scaling groups with, the whole closure for the head image's Python; a "
        "cloud not listed gets no power program")

    def repositories(self) -> dict[str, AptRepositoryPins]:
        """The signed apt repositories the Slurm step installs from, by their field name."""
        return {"packages": self.packages, "munge": self.munge, "container_cli": self.container_cli}

    def downloads(self) -> dict[str, FabricComponent]:
        """The files the Slurm step fetches, each checked by its sha256, by their field name."""
        return {"enroot": self.enroot, "enroot_caps": self.enroot_caps, "pyxis": self.pyxis}

    def power_wheels(self, cloud: str) -> list[WheelPin]:
        """The SDK wheels the power program needs on `cloud` (none: the image carries no power program)."""
        return self.power_sdk.get(cloud, [])

    @model_validator(mode="after")
    def _one_release(self) -> SlurmPins:
        if sorted(self.packages.apt) != sorted(SLURM_PACKAGES):
            raise ValueError(f"packages.apt: must pin exactly {', '.join(SLURM_PACKAGES)}, got "
                             f"{', '.join(sorted(self.packages.apt))}")
        # SchedMD's Debian version is the release plus a revision (slurm-smd_25.11.4-1.dsc).
        wrong = [name for name, version in sorted(self.packages.apt.items())
                 if not re.fullmatch(rf"{re.escape(self.version)}-[0-9]+", version)]
        if wrong:
            raise ValueError(f"packages.apt: {', '.join(wrong)} must be version {self.version}-<revision>: the "
                             "daemons, clients and the headers pyxis builds against are one release")
        if sorted(self.munge.apt) != sorted(MUNGE_PACKAGES) or len(set(self.munge.apt.values())) != 1:
            raise ValueError(f"munge.apt: must pin {', '.join(MUNGE_PACKAGES)} at one version")
        if sorted(self.container_cli.apt) != sorted(CONTAINER_CLI_PACKAGES):
            raise ValueError(f"container_cli.apt: must pin exactly {', '.join(CONTAINER_CLI_PACKAGES)}")
        if self.enroot.version != self.enroot_caps.version:
            raise ValueError(f"enroot_caps.version: {self.enroot_caps.version} differs from enroot's "
                             f"{self.enroot.version}; enroot+caps depends on the same enroot release")
        for cloud, wheels in sorted(self.power_sdk.items()):
            if cloud not in SDK_ROOTS:
                raise ValueError(f"power_sdk.{cloud}: no power program for this cloud (one of {', '.join(SDK_ROOTS)})")
            problems = closure_problems(cloud, wheels)
            if problems:
                raise ValueError(f"power_sdk.{cloud}: not the closure of {', '.join(SDK_ROOTS[cloud])} for the head "
                                 f"image's Python 3.10: {'; '.join(problems)}")
        return self
