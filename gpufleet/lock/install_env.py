"""Render a profile's pins as the env file images/install/install.sh reads (KEY='value' lines, bash-safe)."""

from __future__ import annotations

import shlex

from ..catalog import load_catalog
from .kubernetes_nodes import UBUNTU_CODENAMES
from .model import FABRIC_COMPONENTS, Profile
from .node_tools import SLURM_TOOLS, installed_tools
from .slurm_pins import SlurmPins

# The VM images bake on Ubuntu 22.04 (images/lock.yaml base_images); a Kubernetes node image on its section's release.
VM_UBUNTU = "22.04"

# What a Kubernetes node image adds (images/install/container-toolkit.sh: the toolkit's packages): the image check
# finds them on the build and test instances as it finds NODE_TOOLS.
KUBERNETES_TOOLS = frozenset({"nvidia-container-runtime", "nvidia-ctk"})

_FABRIC_PREFIX = {
    "efa_installer": "EFA_INSTALLER",
    "aws_ofi_nccl": "AWS_OFI_NCCL",
    "doca": "DOCA",
    "erdma": "ERDMA",
}


def _nvswitch_types(cloud: str) -> list[str]:
    catalog = load_catalog()
    return [name for name in catalog.names(cloud) if (inst := catalog.get(cloud, name)) and inst.nvswitch]


def _apt_pins(packages: dict[str, str]) -> str:
    return " ".join(f"{pkg}={version}" for pkg, version in sorted(packages.items()))


def _slurm_values(pins: SlurmPins, cloud: str) -> dict[str, str]:
    """images/install/slurm.sh's pins: each repository's line and packages, and the enroot and pyxis downloads; and
    slurm-power.sh's: the cloud's SDK wheels as `URL SHA256` pairs (none: no power program on the image)."""
    values = {"SLURM_VERSION": pins.version, "PYXIS_VERSION": pins.pyxis.version, "ENROOT_VERSION": pins.enroot.version}
    for name, repo in pins.repositories().items():
        prefix = f"SLURM_{name.upper()}"
        values[f"{prefix}_APT_PINS"] = _apt_pins(repo.apt)
        if name == "munge":  # from the image's own Ubuntu archive, which apt already trusts
            continue
        suite = repo.suite if repo.suite == "/" else f"{repo.suite} {repo.component}"
        values.update({f"{prefix}_SOURCE": f"{repo.url} {suite}", f"{prefix}_KEY_URL": repo.key_url,
                       f"{prefix}_KEY_FINGERPRINT": repo.key_fingerprint})
    for name, component in pins.downloads().items():
        values[f"{name.upper()}_URL"] = component.url or ""
        if component.sha256:
            values[f"{name.upper()}_SHA256"] = component.sha256
    wheels = pins.power_wheels(cloud)
    if wheels:
        values["SLURM_POWER_WHEELS"] = " ".join(f"{wheel.url} {wheel.sha256}" for wheel in wheels)
    return values


def render_install_env(profile: Profile, cloud: str) -> str:
    """The env file for installing `profile` on `cloud`; raises ValueError when the profile lacks that cloud."""
    if cloud not in FABRIC_COMPONENTS:
        raise ValueError(f"cloud: unknown cloud '{cloud}' (expected one of {sorted(FABRIC_COMPONENTS)})")
    if not profile.baked:
        raise ValueError(f"profiles.{profile.name}: installed_by ack: ACK installs its driver, nothing is baked")
    assert profile.fabric is not None and profile.nodecheck is not None and profile.apt is not None
    if cloud not in profile.fabric:
        raise ValueError(f"profiles.{profile.name}.fabric.{cloud}: the profile has no fabric stack for {cloud}")
    values: dict[str, str] = {
        "GPUFLEET_PROFILE": profile.name,
        "GPUFLEET_CLOUD": cloud,
        "DRIVER_VERSION": profile.driver,
        "DRIVER_PINNING_PACKAGE": profile.driver_pinning_package,
        "FABRIC_MANAGER_VERSION": profile.fabric_manager,
        "CUDA_VERSION": profile.cuda,
        "NCCL_VERSION": profile.nccl,
        "DCGM_VERSION": profile.dcgm,
        "APT_PINS": _apt_pins(profile.apt),
        "NVIDIA_ML_PY_VERSION": profile.nodecheck.nvidia_ml_py,
        "NVIDIA_ML_PY_URL": profile.nodecheck.nvidia_ml_py_url,
        "NVIDIA_ML_PY_SHA256": profile.nodecheck.nvidia_ml_py_sha256,
        "NVSWITCH_INSTANCE_TYPES": " ".join(_nvswitch_types(cloud)),
        # What the image check (images/install/image-check.sh) finds on the baked image.
        # Slurm's commands only where the image carries Slurm (a profile with a slurm section).
        "NODE_TOOLS": " ".join(sorted((installed_tools(cloud) - (set() if profile.slurm else set(SLURM_TOOLS)))
                                      | (KUBERNETES_TOOLS if profile.kubernetes else set()))),
        # The apt suite of the base image's release (the FSx Lustre client repository is per suite).
        "UBUNTU_CODENAME": profile.kubernetes.codename if profile.kubernetes else UBUNTU_CODENAMES[VM_UBUNTU],
    }
    if profile.kubernetes is not None:
        # Only a Kubernetes node image gets the container toolkit (images/install/container-toolkit.sh).
        toolkit = profile.kubernetes.container_toolkit
        values.update({
            "KUBERNETES_VERSION": profile.kubernetes.version,
            "CONTAINER_TOOLKIT_VERSION": toolkit.version,
            "CONTAINER_TOOLKIT_APT_PINS": " ".join(f"{pkg}={v}" for pkg, v in sorted(toolkit.apt.items())),
            "CONTAINER_TOOLKIT_URL": toolkit.url,
            "CONTAINER_TOOLKIT_KEY_URL": toolkit.key_url,
            "CONTAINER_TOOLKIT_KEY_FINGERPRINT": toolkit.key_fingerprint,
        })
    if profile.slurm is not None:
        values.update(_slurm_values(profile.slurm, cloud))
    components = {"cuda_keyring": profile.cuda_keyring, **profile.fabric[cloud], **profile.agents.get(cloud, {})}
    for name, component in sorted(components.items()):
        prefix = _FABRIC_PREFIX.get(name, name.upper())
        values[f"{prefix}_VERSION"] = component.version
        for suffix, value in (("URL", component.url), ("SHA256", component.sha256),
                              ("SIGNATURE_URL", component.signature_url), ("PGP_KEY_URL", component.pgp_key_url),
                              ("PGP_FINGERPRINT", component.pgp_fingerprint),
                              ("KEY_URL", component.key_url), ("KEY_FINGERPRINT", component.key_fingerprint)):
            if value:
                values[f"{prefix}_{suffix}"] = value
    header = f"# gpufleet install pins: profile {profile.name}, cloud {cloud} (rendered from images/lock.yaml)\n"
    return header + "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items())
