"""Which facts a lock needs read from a source, each keyed as images/lock.resolved.yaml records it.

One list serves both directions: `gpufleet lock resolve` reads each need from its source; `plan`, `images check` and
a real run compare the needs with what was recorded (gpufleet.lock.fact_status). A need names the lock field it
serves, so every finding points at the line to change.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from .facts import base_image_key as base_key
from .model import FabricComponent, Lock, Profile

# The packages images/install/lustre.sh installs from each client's apt repository, by name (their version follows the
# kernel or is in the name): the resolve checks each is there for the image's release. FSx's modules package is named
# after the base image's kernel, known only on the builder (lustre.sh fails naming it when FSx has none).
AGENT_PACKAGES = {"lustre_client": ("lustre-client-utils",),
                  "amlfs_lustre_client": ("amlfs-lustre-client-dkms-{version}",)}
# The suites of NVIDIA's flat repositories (`deb URL /`).
FLAT = "/"
# The AMI type of the EKS system group (components/clouds/aws/eks_system.py AMI_TYPE AL2023_x86_64_STANDARD) as EKS's
# public SSM parameters name it. Under .../recommended, the sub-parameter release_version is the release a managed
# node group takes as releaseVersion (docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id.html: the
# parameters /aws/service/eks/optimized-ami/<kubernetes-version>/<ami-type>/recommended/<sub-parameter>; Systems
# Manager user guide parameter-store-public-parameters-eks.html: the recommended value carries image_id, image_name
# and release_version).
EKS_SYSTEM_AMI = "amazon-linux-2023/x86_64/standard"


@dataclass(frozen=True)
class AptNeed:
    """A repository whose InRelease is verified with a pinned key and whose index must list `packages`."""

    key: str
    fields: tuple[str, ...]
    url: str
    suite: str
    packages: tuple[tuple[str, str], ...]  # (name, version) pins; profiles sharing a repository may pin two versions
    fingerprint: str | None
    key_url: str | None = None
    keyring_deb: str | None = None  # the sha256-pinned keyring package that carries the key (CUDA's)
    component: str = "main"


@dataclass(frozen=True)
class DownloadNeed:
    """A file the bake fetches: its bytes' sha256 (and a PGP key's fingerprint) as first read or as published."""

    key: str
    fields: tuple[str, ...]
    url: str
    sha256: str | None = None
    key_fingerprint: str | None = None
    release: str | None = None  # the GitHub release (REST API) whose asset digest is the file's published sha256
    # A wheel's Requires-Python and Requires-Dist as the lock records them: its METADATA must say the same.
    wheel_requires: tuple[str | None, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class ImageNeed:
    key: str
    fields: tuple[str, ...]
    reference: str
    platforms: tuple[str, ...] = ("linux/amd64",)


@dataclass(frozen=True)
class ManagedNeed:
    """A version a managed Kubernetes service chooses: `<service>/<minor>/kubernetes`, `.../addon/<name>`, or the
    release of a node AMI EKS publishes as a public SSM `parameter` (`eks/<minor>/ami-release/<ami type>`)."""

    key: str
    fields: tuple[str, ...]
    service: str
    minor: str
    name: str | None = None
    region: str | None = None
    parameter: str | None = None


@dataclass(frozen=True)
class BaseNeed:
    key: str
    fields: tuple[str, ...]
    cloud: str
    region: str
    reference: str
    boot_mode: str | None = None


Need = AptNeed | DownloadNeed | ImageNeed | ManagedNeed | BaseNeed
# The kind of each need as `lock resolve --only` names it (DESIGN.md, "Resolve"), and the record's section for it.
SECTION = {AptNeed: "apt", DownloadNeed: "downloads", ImageNeed: "images", ManagedNeed: "addons", BaseNeed: "base"}
RECORD = {"apt": "apt", "downloads": "downloads", "images": "images", "addons": "managed", "base": "base_images"}


def apt_key(url: str, suite: str) -> str:
    return f"{url.rstrip('/')}/ {suite}"


def managed_key(service: str, minor: str, name: str | None = None) -> str:
    return f"{service}/{minor}/addon/{name}" if name else f"{service}/{minor}/kubernetes"


def eks_release_key(minor: str) -> str:
    """The record key of the EKS system group's AMI release for a Kubernetes minor."""
    return f"eks/{minor}/ami-release/{EKS_SYSTEM_AMI}"


def eks_release_need(minor: str, region: str | None) -> ManagedNeed:
    """The EKS system group's AMI release: the recommended one for the minor, read once and pinned."""
    parameter = f"/aws/service/eks/optimized-ami/{minor}/{EKS_SYSTEM_AMI}/recommended/release_version"
    field = "scheduler.system_group (the EKS managed node group's releaseVersion)"
    return ManagedNeed(eks_release_key(minor), (field,), "eks", minor, None, region, parameter)


def _merge(needs: list[Need]) -> list[Need]:
    """One need per key; the fields it serves joined (two profiles sharing a download read it once)."""
    found: dict[tuple[type, str], Need] = {}
    for need in needs:
        seen = found.get((type(need), need.key))
        if seen is None:
            found[(type(need), need.key)] = need
            continue
        fields = tuple(dict.fromkeys((*seen.fields, *need.fields)))
        if isinstance(seen, AptNeed) and isinstance(need, AptNeed):
            found[(type(need), need.key)] = AptNeed(seen.key, fields, seen.url, seen.suite,
                                                    tuple(sorted({*seen.packages, *need.packages})), seen.fingerprint,
                                                    seen.key_url, seen.keyring_deb, seen.component)
        else:
            found[(type(need), need.key)] = type(seen)(**{**seen.__dict__, "fields": fields})
    return list(found.values())


def _download_needs(component: FabricComponent, path: str) -> list[Need]:
    """A component's fetched files: the file (unless it is an apt repository), its signature and its keys."""
    needs: list[Need] = []
    if component.url and component.key_url is None:
        needs.append(DownloadNeed(component.url, (f"{path}.sha256",), component.url, component.sha256,
                                  release=component.release))
    if component.signature_url:
        needs.append(DownloadNeed(component.signature_url, (f"{path}.signature_url",), component.signature_url))
    if component.pgp_key_url:
        needs.append(DownloadNeed(component.pgp_key_url, (f"{path}.pgp_fingerprint",), component.pgp_key_url,
                                  key_fingerprint=component.pgp_fingerprint))
    if component.key_url:
        needs.append(DownloadNeed(component.key_url, (f"{path}.key_fingerprint",), component.key_url,
                                  key_fingerprint=component.key_fingerprint))
    return needs


def _codename(profile: Profile) -> str:
    from .kubernetes_nodes import UBUNTU_CODENAMES

    return UBUNTU_CODENAMES[profile.kubernetes.ubuntu] if profile.kubernetes else "jammy"


def _repository_needs(profile: Profile, clouds: tuple[str, ...]) -> list[Need]:
    """The apt repositories a bake of `profile` installs from: NVIDIA's CUDA repository (the apt pins and the driver
    pinning package), the container toolkit's (Kubernetes node images) and each cloud's Lustre client repository."""
    at = f"profiles.{profile.name}"
    assert profile.cuda_keyring is not None and profile.apt is not None and profile.driver_pinning_package
    cuda = posixpath.dirname(profile.cuda_keyring.url or "") + "/"
    # The pinning package's name carries the driver version; any version of it the index lists will do ("").
    pins = tuple(sorted({*profile.apt.items(), (profile.driver_pinning_package, "")}))
    needs: list[Need] = [AptNeed(apt_key(cuda, FLAT), (f"{at}.apt", f"{at}.driver_pinning_package"), cuda, FLAT,
                                 pins, profile.cuda_keyring.key_fingerprint, keyring_deb=profile.cuda_keyring.url)]
    if profile.kubernetes is not None:
        toolkit = profile.kubernetes.container_toolkit
        needs.append(AptNeed(apt_key(toolkit.url, FLAT), (f"{at}.kubernetes.container_toolkit.apt",), toolkit.url,
                             FLAT, tuple(sorted(toolkit.apt.items())), toolkit.key_fingerprint, toolkit.key_url))
    for cloud in clouds:
        for name, agent in profile.agents.get(cloud, {}).items():
            if agent.key_url and agent.url:
                packages = tuple((package.format(version=agent.version), "")
                                 for package in AGENT_PACKAGES.get(name, ()))
                needs.append(AptNeed(apt_key(agent.url, _codename(profile)), (f"{at}.agents.{cloud}.{name}",),
                                     agent.url, _codename(profile), packages, agent.key_fingerprint, agent.key_url))
    return needs


def slurm_needs(profile: Profile, clouds: tuple[str, ...]) -> list[Need]:
    """What the Slurm step of a VM bake on `clouds` installs: SchedMD's packages, munge and nvidia-container-cli, each
    from its signed repository (the index must list every pin), the enroot and pyxis downloads and those clouds' power
    program SDK wheels."""
    if profile.slurm is None:
        return []
    at, pins = f"profiles.{profile.name}.slurm", profile.slurm
    needs: list[Need] = [
        AptNeed(apt_key(repo.url, repo.suite if repo.suite == FLAT else f"{repo.suite} {repo.component}"),
                (f"{at}.{name}.apt",), repo.url, repo.suite,
                tuple(sorted(repo.apt.items())), repo.key_fingerprint, repo.key_url, component=repo.component)
        for name, repo in pins.repositories().items()]
    for name, component in pins.downloads().items():
        needs += _download_needs(component, f"{at}.{name}")
    needs += [DownloadNeed(wheel.url, (f"{at}.power_sdk.{cloud}[{index}].sha256",), wheel.url, wheel.sha256,
                           wheel_requires=(wheel.requires_python, tuple(wheel.requires_dist)))
              for cloud in sorted(clouds) for index, wheel in enumerate(pins.power_wheels(cloud))]
    # The repositories' signing keys, each trusted by its pinned fingerprint.
    return needs + [DownloadNeed(repo.key_url, (f"{at}.{name}.key_fingerprint",), repo.key_url,
                                 key_fingerprint=repo.key_fingerprint)
                    for name, repo in pins.repositories().items()]


def profile_needs(profile: Profile, clouds: tuple[str, ...] | None = None) -> list[Need]:
    """What a bake of `profile` on `clouds` (default: every cloud it has images for) fetches and installs; nothing for
    a profile whose driver ACK installs (installed_by: ack: no bake)."""
    if not profile.baked:
        return []
    assert profile.cuda_keyring is not None and profile.nodecheck is not None  # a baked profile's
    clouds = clouds if clouds is not None else tuple(profile.images)
    at = f"profiles.{profile.name}"
    needs = _repository_needs(profile, clouds)
    needs += _download_needs(profile.cuda_keyring, f"{at}.cuda_keyring")
    nodecheck = profile.nodecheck
    needs.append(DownloadNeed(nodecheck.nvidia_ml_py_url, (f"{at}.nodecheck.nvidia_ml_py_sha256",),
                              nodecheck.nvidia_ml_py_url, nodecheck.nvidia_ml_py_sha256))
    for section in ("fabric", "agents"):
        for cloud in clouds:
            for name, component in (getattr(profile, section) or {}).get(cloud, {}).items():
                needs += _download_needs(component, f"{at}.{section}.{cloud}.{name}")
    return _merge(needs + slurm_needs(profile, clouds))


def base_needs(lock: Lock, profile: Profile | None, cloud: str, regions: tuple[str, ...]) -> list[Need]:
    """The base image each build region starts from: a Kubernetes profile's node base, else the lock's (Alibaba:
    one per boot mode, each read with its boot mode)."""
    if profile is not None and not profile.baked:
        return []
    needs: list[Need] = []
    for region in regions:
        node = profile.kubernetes.base_images.get(cloud, {}).get(region) if profile and profile.kubernetes else None
        if node is not None:
            at = f"profiles.{profile.name}.kubernetes.base_images.{cloud}.{region}"
            needs.append(BaseNeed(base_key(cloud, region, node.parent_image), (at,), cloud, region,
                                  node.parent_image))
            continue
        for mode, base in lock.base_image_entries(cloud, region).items():
            reference = base.parent_image or base.name_regex
            field = f"base_images.{cloud}.{region}" + (f".{mode}" if mode else "")
            if reference:
                needs.append(BaseNeed(base_key(cloud, region, reference), (field,), cloud, region, reference,
                                      base.boot_mode))
    return needs


def image_stack_needs(lock: Lock, profile: str, cloud: str, build_region: str) -> list[Need]:
    """What an image stack's bake reads: its profile's repositories and downloads for its cloud, its base image."""
    found = lock.profiles.get(profile)
    if found is None:
        return []
    return profile_needs(found, (cloud,)) + base_needs(lock, found, cloud, (build_region,))


def image_needs(lock: Lock) -> list[Need]:
    """Every in-cluster image the lock pins by tag: its digest per platform."""
    pins = lock.kubernetes_components
    if pins is None:
        return []
    return _merge([ImageNeed(image.image, (f"kubernetes_components.{component}.images.{key}",), image.image)
                   for component, pin in pins for key, image in pin.images.items()])


def managed_needs(service: str, minor: str, names: tuple[str, ...], region: str | None,
                  with_version: bool) -> list[Need]:
    """A managed cluster's Kubernetes version (`with_version`: ACK and AKS take a full one), its add-ons and, on EKS,
    the system group's AMI release."""
    catalog = {"eks": "gpufleet/catalog/eks_addons.yaml", "ack": "gpufleet/catalog/ack_addons.yaml"}.get(service, "")
    # The version first: an add-on's versions are read for it.
    needs: list[Need] = [ManagedNeed(managed_key(service, minor), ("scheduler.version",), service, minor, None,
                                     region)] if with_version else []
    needs += [ManagedNeed(managed_key(service, minor, name), (f"{catalog} kubernetes.{minor}.{name}",),
                          service, minor, name, region) for name in names]
    return needs + [eks_release_need(minor, region)] if service == "eks" else needs


def lock_needs(lock: Lock) -> list[Need]:
    """Everything the lock itself names (profiles on every cloud they bake for, base images, in-cluster images);
    managed versions come from the stacks that use them (gpufleet.lock_resolve)."""
    needs: list[Need] = []
    for profile in lock.profiles.values():
        needs += profile_needs(profile)
        for cloud, regions in profile.images.items():
            build = tuple(region for region in regions if lock.base_image_entry(cloud, region) is not None
                          or (profile.kubernetes and region in profile.kubernetes.base_images.get(cloud, {})))
            needs += base_needs(lock, profile, cloud, build)
    return _merge(needs + image_needs(lock))
