"""A lock profile's optional `kubernetes:` section: what makes a driver image profile a Kubernetes node image.

The node image is the project's own bake (the same pinned driver stack, fabric, agents and node check as the VM
images) on the image Canonical publishes for EKS at one Kubernetes minor, plus the NVIDIA container toolkit as
containerd's runtime. The section pins that base per cloud and build region, the toolkit's apt packages and the
Kubernetes minor; `kubelet` records what the base image carried once someone read it off a bake (null until then,
with the reason beside it, as every unconfirmed value of the lock).
"""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from ..yaml_model import StrictModel

# The packages NVIDIA's install guide pins together at one version (`apt-get install nvidia-container-toolkit=V
# nvidia-container-toolkit-base=V libnvidia-container-tools=V libnvidia-container1=V`, V = <toolkit version>-1):
# NVIDIA/cloud-native-docs container-toolkit/install-guide.md "With apt: Ubuntu, Debian".
TOOLKIT_PACKAGES = ("libnvidia-container-tools", "libnvidia-container1", "nvidia-container-toolkit",
                    "nvidia-container-toolkit-base")
# Ubuntu release -> codename (apt suites of the release: the FSx Lustre client repository takes it).
UBUNTU_CODENAMES = {"22.04": "jammy", "24.04": "noble"}
# Canonical's EKS image parameter per release: ebs-gp2 up to 22.04, ebs-gp3 from 24.04 (canonical/ubuntu-cloud-docs
# docs/aws/aws-how-to/instances/find-ubuntu-images.rst, "For EKS": ubuntu/$EKS_PRODUCT/$RELEASE/$K8S_VERSION/stable/
# current/$ARCH/hvm/$VOL_TYPE/ami-id).
EKS_VOLUME = {"22.04": "ebs-gp2", "24.04": "ebs-gp3"}
MINOR = r"^1\.[0-9]{1,2}$"


def eks_base_parameter(ubuntu: str, version: str) -> str:
    """The parent image of an EKS node bake: Canonical's current amd64 EKS image of this release and minor."""
    return (f"ssm:/aws/service/canonical/ubuntu/eks/{ubuntu}/{version}/stable/current/amd64/hvm/"
            f"{EKS_VOLUME[ubuntu]}/ami-id")


class NodeBaseImage(StrictModel):
    """The image a Kubernetes node bake starts from in one build region (Image Builder's parentImage)."""

    parent_image: str = Field(..., min_length=1, description="e.g. an ssm: parameter Image Builder resolves at build")
    source: str = Field(..., min_length=3, description="where the reference was read")


class ContainerToolkit(StrictModel):
    """The NVIDIA container toolkit from NVIDIA's apt repository, at exact package versions."""

    version: str = Field(..., pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$", description="the toolkit release, e.g. 1.20.0")
    apt: dict[str, str] = Field(..., description="package -> exact version (NVIDIA's guide: <version>-1)")
    url: str = Field(..., pattern=r"^https://\S+$", description="the flat apt repository (`deb URL /`)")
    key_url: str = Field(..., pattern=r"^https://\S+$", description="the repository's signing key")
    key_fingerprint: str = Field(..., pattern=r"^[0-9A-F]{40}$", description="the one primary key key_url must hold")

    @model_validator(mode="after")
    def _the_guides_packages(self) -> ContainerToolkit:
        if sorted(self.apt) != sorted(TOOLKIT_PACKAGES):
            raise ValueError(f"apt: must pin exactly {', '.join(TOOLKIT_PACKAGES)} (NVIDIA's install guide installs "
                             f"them together), got {', '.join(sorted(self.apt)) or 'none'}")
        return self


class KubernetesNodeProfile(StrictModel):
    """A profile's `kubernetes:` section: the Kubernetes minor its image serves, the base per cloud and region, the
    container toolkit and the recorded kubelet."""

    version: str = Field(..., pattern=MINOR, description='the Kubernetes minor, e.g. "1.35"')
    ubuntu: str = Field(..., description="the Ubuntu release of the base image (22.04 or 24.04)")
    base_images: dict[str, dict[str, NodeBaseImage]] = Field(
        ..., min_length=1, description="cloud -> build region -> the node base image of this Kubernetes minor")
    container_toolkit: ContainerToolkit
    kubelet: str | None = Field(..., pattern=r"^1\.[0-9]{1,2}\.[0-9]+$",
                                description="the kubelet the baked image carries, as read off a bake; null: unread")
    kubelet_unrecorded: str | None = Field(None, description="kubelet null: why, and how to record it")

    @model_validator(mode="after")
    def _consistent(self) -> KubernetesNodeProfile:
        if self.ubuntu not in UBUNTU_CODENAMES:
            raise ValueError(f"ubuntu: {self.ubuntu!r} is not a release with EKS images here "
                             f"({', '.join(UBUNTU_CODENAMES)})")
        if (self.kubelet is None) != bool(self.kubelet_unrecorded):
            raise ValueError("kubelet: a recorded kubelet goes without kubelet_unrecorded, a null one with it (why "
                             "it is not recorded)")
        if self.kubelet is not None and not self.kubelet.startswith(f"{self.version}."):
            raise ValueError(f"kubelet: {self.kubelet} is not a kubelet of Kubernetes {self.version}")
        return self

    @property
    def codename(self) -> str:
        return UBUNTU_CODENAMES[self.ubuntu]


def kubernetes_problems(section: KubernetesNodeProfile, sources: dict[str, str], keyring_url: str | None,
                        image_clouds: set[str]) -> list[tuple[str, str]]:
    """(field, message) for every rule `images check` enforces on a Kubernetes section beyond its shape: the
    toolkit's packages at its version, a source for each pin, each base image at this Kubernetes minor and Ubuntu
    release, the CUDA repository of that release, an image only where a base is pinned."""
    problems = []
    toolkit = section.container_toolkit
    for package, version in sorted(toolkit.apt.items()):
        if version.split(":", 1)[-1].rsplit("-", 1)[0] != toolkit.version:
            problems.append((f"kubernetes.container_toolkit.apt.{package}",
                             f"{version} is not toolkit {toolkit.version} (NVIDIA's guide pins {toolkit.version}-1)"))
    for key in ("kubernetes.container_toolkit", "kubernetes.base_images"):
        if not sources.get(key):
            problems.append((f"sources.{key}", "no source recorded for this pin: say where it was read"))
    for cloud, regions in sorted(section.base_images.items()):
        for region, base in sorted(regions.items()):
            expected = eks_base_parameter(section.ubuntu, section.version) if cloud == "aws" else None
            if expected is not None and base.parent_image != expected:
                problems.append((f"kubernetes.base_images.{cloud}.{region}.parent_image",
                                 f"{base.parent_image!r} is not Canonical's EKS {section.version} image on Ubuntu "
                                 f"{section.ubuntu}: expected {expected!r}"))
            elif expected is None and not re.search(rf"\b{re.escape(section.version)}\b", base.parent_image):
                problems.append((f"kubernetes.base_images.{cloud}.{region}.parent_image",
                                 f"{base.parent_image!r} does not name Kubernetes {section.version}"))
    release = f"ubuntu{section.ubuntu.replace('.', '')}"
    if keyring_url is not None and f"/repos/{release}/" not in keyring_url:
        problems.append(("cuda_keyring.url", f"{keyring_url} is not the CUDA repository of Ubuntu {section.ubuntu}, "
                                             "the release the Kubernetes base image runs"))
    for cloud in sorted(image_clouds - set(section.base_images)):
        problems.append((f"images.{cloud}", f"no kubernetes.base_images.{cloud}: nothing bakes this node image there"))
    return problems


def kubernetes_notes(section: KubernetesNodeProfile) -> list[tuple[str, str]]:
    """(field, message) the check reports without failing: what the lock does not know yet."""
    if section.kubelet is None:
        return [("kubernetes.kubelet", f"unrecorded: {section.kubelet_unrecorded}")]
    return []


def node_image_mismatch(section: KubernetesNodeProfile | None, profile: str,
                        kubernetes_version: str | None) -> str | None:
    """Why a cluster cannot boot image profile `profile` (its `kubernetes:` section or None), or None when it can: a
    Kubernetes cluster (kubernetes_version set) needs a node image of its minor, a VM cluster (None) no node image.
    For the stack-file checks, which name the field."""
    if kubernetes_version is None:
        if section is not None:
            return (f"image profile {profile!r} is a Kubernetes {section.version} node image: a cluster without a "
                    "Kubernetes scheduler boots a VM profile")
        return None
    if section is None:
        return (f"image profile {profile!r} has no kubernetes section: a Kubernetes {kubernetes_version} cluster boots "
                f"a node image of that minor (e.g. one named <profile>-eks{kubernetes_version})")
    if section.version != kubernetes_version:
        return (f"image profile {profile!r} is a Kubernetes {section.version} node image; the cluster runs "
                f"Kubernetes {kubernetes_version}")
    return None
