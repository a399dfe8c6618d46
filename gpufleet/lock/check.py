"""Checks over a loaded lock: every rule `gpufleet images check` enforces, each with a precise message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ..catalog import Catalog, load_catalog
from ..catalog.ack import load_ack_facts
from ..clouds.alicloud.ack_facts import DRIVER_LABEL as ACK_DRIVER_LABEL
from .image_ids import EXPECTED_PARENT_SHAPE, EXPECTED_SHAPE, is_valid_image_id, is_valid_parent_image
from .kubernetes_nodes import kubernetes_notes, kubernetes_problems
from .model import Lock, Profile
from .versions import cuda_minor, driver_branch, version_key


@dataclass(frozen=True)
class LockProblem:
    profile: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.profile}: {self.field}: {self.message}"


def _versions(profile: Profile) -> dict[str, str]:
    """Every pinned version and image id of a profile, by field path."""
    found = {"driver": profile.driver, "fabric_manager": profile.fabric_manager, "cuda": profile.cuda}
    if not profile.baked:
        return found  # ACK installs the driver: the profile pins nothing else
    assert profile.apt is not None and profile.fabric is not None and profile.nodecheck is not None
    found.update({
        "nccl": str(profile.nccl),
        "dcgm": str(profile.dcgm),
        "driver_pinning_package": str(profile.driver_pinning_package),
        "nodecheck.nvidia_ml_py": profile.nodecheck.nvidia_ml_py,
    })
    found.update({f"apt.{pkg}": version for pkg, version in profile.apt.items()})
    for cloud, components in profile.fabric.items():
        for name, component in components.items():
            found[f"fabric.{cloud}.{name}.version"] = component.version
            if component.url:
                found[f"fabric.{cloud}.{name}.url"] = component.url
    for cloud, regions in profile.images.items():
        found.update({f"images.{cloud}.{region}" + (f".{mode}" if mode else ""): e.id for region in regions
                      for mode, e in profile.image_entries(cloud, region).items() if e.id is not None})
    if profile.kubernetes is not None:
        toolkit = profile.kubernetes.container_toolkit
        found["kubernetes.container_toolkit.version"] = toolkit.version
        found.update({f"kubernetes.container_toolkit.apt.{pkg}": v for pkg, v in toolkit.apt.items()})
        found.update({f"kubernetes.base_images.{cloud}.{region}.parent_image": base.parent_image
                      for cloud, regions in profile.kubernetes.base_images.items()
                      for region, base in regions.items()})
    return found


def _check_latest(profile: Profile) -> list[LockProblem]:
    return [
        LockProblem(profile.name, field, f"'{value}' says 'latest': pin an exact version")
        for field, value in _versions(profile).items()
        if "latest" in value.lower()
    ]


def _check_numeric(profile: Profile) -> list[LockProblem]:
    problems = []
    for field in ("driver", "fabric_manager", "cuda"):
        value = getattr(profile, field)
        try:
            version_key(value)
        except ValueError:
            problems.append(LockProblem(profile.name, field, f"'{value}' is not a dotted numeric version"))
    return problems


def _check_driver(lock: Lock, profile: Profile) -> list[LockProblem]:
    """The fabric manager equals the driver and the driver meets the profile's CUDA minimum."""
    name, driver = profile.name, profile.driver
    problems = []
    if profile.fabric_manager != driver:
        problems.append(LockProblem(
            name, "fabric_manager",
            f"fabric manager {profile.fabric_manager} differs from driver {driver}: "
            "it must equal the driver exactly or it refuses to start",
        ))
    minor = cuda_minor(profile.cuda)
    minimum = lock.cuda_minimum_driver.versions.get(minor)
    if minimum is None:
        problems.append(LockProblem(name, "cuda", f"no minimum driver recorded for CUDA {minor}"))
    elif version_key(driver) < version_key(minimum):
        problems.append(LockProblem(
            name, "driver", f"driver {driver} is below the minimum {minimum} for CUDA {minor}",
        ))
    return problems


def _branch_problem(lock: Lock, profile: Profile, on: date) -> LockProblem | None:
    """The driver's branch is known, in NVIDIA's support matrix and not past its end of life on `on`."""
    driver, branch_name = profile.driver, driver_branch(profile.driver)
    branch = lock.driver_branches.branches.get(branch_name)
    if branch is None:
        message = f"driver {driver} is on unknown branch {branch_name.upper()} (not in driver_branches)"
    elif not branch.supported:
        message = f"driver {driver} is on branch {branch_name.upper()}, out of the support matrix"
    elif branch.eol is not None and on > branch.eol:
        message = (f"driver branch {branch_name.upper()} reached end of life on {branch.eol.isoformat()} "
                   f"(checked for {on.isoformat()})")
    else:
        return None
    return LockProblem(profile.name, "driver", message)


def _ack_branch_note(lock: Lock, profile: Profile, on: date) -> LockProblem | None:
    """An ACK-installed driver's branch verdict, reported without failing: gpufleet can pick only from ACK's list."""
    found = _branch_problem(lock, profile, on)
    if found is None:
        return None
    return LockProblem(profile.name, "driver", f"{found.message}: ACK installs this driver (the node pools' "
                                               f"{ACK_DRIVER_LABEL} label, from ACK's driver list) and gpufleet "
                                               "bakes nothing for this profile (installed_by: ack)")


def _check_ack_listed(profile: Profile) -> list[LockProblem]:
    """An installed_by: ack profile's driver is one ACK's driver list names (gpufleet/catalog/ack.yaml), or ACK would
    install its default driver instead of it."""
    unlisted = load_ack_facts().unlisted_driver(profile.driver)
    return [LockProblem(profile.name, "driver", f"installed_by ack: {unlisted}")] if unlisted else []


def _driver_cuda_major(lock: Lock, driver: str) -> str | None:
    """The CUDA major of the driver's user-mode driver: the newest CUDA release whose minimum driver it meets
    (r580 ships CUDA 13.0's, per the lock's CUDA release notes table)."""
    met = [cuda for cuda, minimum in lock.cuda_minimum_driver.versions.items()
           if version_key(driver) >= version_key(minimum)]
    return max(met, key=version_key).split(".")[0] if met else None


def _check_apt(lock: Lock, profile: Profile) -> list[LockProblem]:
    """The apt pins the bake installs agree with the profile's labels: the fabric manager package is the driver's
    version, NCCL is the profile's NCCL built for its CUDA major, DCGM's CUDA flavour is the driver's CUDA major
    (NVIDIA's DCGM install guide installs datacenter-gpu-manager-4-cuda<the CUDA major nvidia-smi reports>), the toolkit
    package is the profile's CUDA, the pinning package the driver's."""
    name, problems = profile.name, []
    cuda_major = profile.cuda.split(".")[0]
    driver_major = _driver_cuda_major(lock, profile.driver)
    for package, version in sorted(profile.apt.items()):
        upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
        wrong = None
        if package == "nvidia-fabricmanager" and upstream != profile.driver:
            wrong = f"is {upstream}, the driver is {profile.driver}: the fabric manager must equal it"
        elif package in ("libnccl2", "libnccl-dev"):
            built = re.fullmatch(r"(?P<nccl>[0-9.]+)-\d+\+cuda(?P<major>\d+)\.\d+", version, re.ASCII)
            if built is None or built["nccl"] != profile.nccl or built["major"] != cuda_major:
                wrong = f"is not NCCL {profile.nccl} built for CUDA {cuda_major} (VERSION-N+cuda{cuda_major}.M)"
        elif (flavour := re.fullmatch(r"datacenter-gpu-manager-4-cuda(\d+)", package, re.ASCII)) and \
                flavour[1] != driver_major:
            wrong = (f"is DCGM's CUDA {flavour[1]} flavour; driver {profile.driver} runs CUDA {driver_major}: "
                     f"install datacenter-gpu-manager-4-cuda{driver_major}")
        elif package.startswith("datacenter-gpu-manager-4-") and upstream != profile.dcgm:
            wrong = f"is {upstream}, the profile's DCGM is {profile.dcgm}"
        elif (toolkit := re.fullmatch(r"cuda-toolkit-(\d+)-(\d+)", package, re.ASCII)) and (
                f"{toolkit[1]}.{toolkit[2]}" != cuda_minor(profile.cuda) or upstream != profile.cuda):
            wrong = f"is not CUDA {profile.cuda}"
        if wrong:
            problems.append(LockProblem(name, f"apt.{package}", f"{version} {wrong}"))
    if profile.driver_pinning_package != f"nvidia-driver-pinning-{profile.driver}":
        problems.append(LockProblem(name, "driver_pinning_package",
                                    f"{profile.driver_pinning_package} does not pin driver {profile.driver}"))
    return problems


# What every bake installs from NVIDIA's repository at a pinned version (the fabric manager, NCCL, DCGM, the toolkit):
# a profile without one would let apt choose it.
REQUIRED_PINS = {"nvidia-fabricmanager": r"nvidia-fabricmanager", "libnccl2": r"libnccl2",
                 "datacenter-gpu-manager-4-core": r"datacenter-gpu-manager-4-core",
                 "cuda-toolkit-X-Y": r"cuda-toolkit-\d+-\d+"}


def _check_required_pins(profile: Profile) -> list[LockProblem]:
    """The pins the bake needs are present, each download's URL names its version, and the kernel modules are the
    flavour the installer installs (images/install/gpu-stack.sh installs nvidia-open only)."""
    assert profile.apt is not None and profile.fabric is not None  # a baked profile's (model._fields_of_the_installer)
    problems = [LockProblem(profile.name, "apt", f"no pin for {label}: the bake would install whatever apt chooses")
                for label, pattern in REQUIRED_PINS.items()
                if not any(re.fullmatch(pattern, package) for package in profile.apt)]
    for group, by_cloud in (("fabric", profile.fabric), ("agents", profile.agents)):
        problems += [LockProblem(profile.name, f"{group}.{cloud}.{name}.url",
                                 f"{component.url} does not name version {component.version}")
                     for cloud, found in by_cloud.items() for name, component in found.items()
                     if component.url and component.key_url is None and component.version not in component.url]
    if profile.kernel_modules != "open":
        problems.append(LockProblem(profile.name, "kernel_modules", f"{profile.kernel_modules}: the installer "
                                    "installs the open modules only (images/install/gpu-stack.sh: nvidia-open)"))
    return problems


# Architectures each kernel module flavour drives: the open modules Turing and newer (NVIDIA/open-gpu-kernel-modules
# README, "Compatible GPUs"); the proprietary ones up to Hopper, Blackwell needing the open ones (NVIDIA driver
# installation guide, "Kernel modules"). Azure/azhpc-images installs the proprietary modules for V100 for this reason.
MODULE_ARCHITECTURES: dict[str, frozenset[str]] = {
    "open": frozenset({"turing", "ampere", "ada", "hopper", "blackwell"}),
    "proprietary": frozenset({"volta", "turing", "ampere", "ada", "hopper"}),
}


def _check_modules(profile: Profile, catalog: Catalog) -> list[LockProblem]:
    """Every catalog GPU of every cloud the profile has images for must be one its kernel modules drive."""
    drives = MODULE_ARCHITECTURES[profile.kernel_modules]
    return [
        LockProblem(profile.name, "kernel_modules",
                    f"{cloud} {name} has {inst.gpu.model} ({inst.gpu.architecture}), which the "
                    f"{profile.kernel_modules} kernel modules do not drive: drop it from the catalog or bake a "
                    "profile whose modules do")
        for cloud in sorted(profile.images) for name in catalog.names(cloud)
        if (inst := catalog.get(cloud, name)) and inst.gpu.architecture not in drives
    ]


def check_downloads(profile: Profile) -> list[LockProblem]:
    """Every download the bake makes is checked (images/install/common.sh fetch, fetch_signed, fetch_key refuse the
    rest): the problem names the field the bake would stop on. `images check` (the gate before a bake) runs it;
    plans do not, so a cloud whose vendor publishes no hash still plans while its bake refuses. An installed_by: ack
    profile downloads nothing."""
    if profile.cuda_keyring is None or profile.fabric is None:
        return []
    components = {"cuda_keyring": profile.cuda_keyring}
    for group, by_cloud in (("fabric", profile.fabric), ("agents", profile.agents)):
        components.update({f"{group}.{cloud}.{name}": c
                           for cloud, found in by_cloud.items() for name, c in found.items()})
    if profile.slurm is not None:
        components.update({f"slurm.{name}": c for name, c in profile.slurm.downloads().items()})
    return [LockProblem(profile.name, f"{path}.{missing[0]}", f"{missing[1]}: the bake refuses an unverified download")
            for path, component in sorted(components.items()) if (missing := component.unverified())]


def _check_images(profile: Profile, required_regions: dict[str, set[str]]) -> list[LockProblem]:
    problems = []
    if profile.kubernetes is not None:
        # A Kubernetes node image serves the clouds it has a node base for (EKS first); others are not required.
        required_regions = {c: r for c, r in required_regions.items() if c in profile.kubernetes.base_images}
    for cloud, regions in sorted(profile.images.items()):
        for region, mode, entry in ((r, m, e) for r in sorted(regions)
                                    for m, e in profile.image_entries(cloud, r).items()):
            # An unbaked entry (id null, status unbaked) is sound: plans show it, deploys refuse it.
            image = entry.id
            if image is not None and "latest" not in image.lower() and not is_valid_image_id(cloud, image):
                problems.append(LockProblem(
                    profile.name, f"images.{cloud}.{region}" + (f".{mode}" if mode else ""),
                    f"'{image}' is not a valid {cloud} image id: expected {EXPECTED_SHAPE[cloud]}",
                ))
    for cloud, regions in sorted(required_regions.items()):
        for region in sorted(set(regions) - set(profile.images.get(cloud, {}))):
            problems.append(LockProblem(
                profile.name, f"images.{cloud}.{region}", f"no image for required region {cloud}/{region}",
            ))
    return problems


def _check_kubernetes(profile: Profile) -> list[LockProblem]:
    """A Kubernetes profile's section: toolkit packages at its version, sources, bases at its minor and release."""
    if profile.kubernetes is None:
        return []
    found = kubernetes_problems(profile.kubernetes, profile.sources, profile.cuda_keyring.url, set(profile.images))
    found += [(f"kubernetes.base_images.{cloud}.{region}.parent_image",
               f"'{base.parent_image}' is not a pinnable {cloud} parent image: expected "
               f"{EXPECTED_PARENT_SHAPE.get(cloud, 'a cloud with an image pipeline (aws)')}")
              for cloud, regions in sorted(profile.kubernetes.base_images.items())
              for region, base in sorted(regions.items())
              if not is_valid_parent_image(cloud, base.parent_image)]
    return [LockProblem(profile.name, field, message) for field, message in found]


def lock_notes(lock: Lock, profile: str | None = None, on: date | None = None) -> list[LockProblem]:
    """What `images check` reports without failing: values the lock records as not known yet (a Kubernetes
    image's kubelet before anyone read it off a bake), and, checked for date `on`, the driver branch of each profile
    ACK installs (an unsupported branch is ACK's choice, not a bake's)."""
    names = [name for name in ([profile] if profile is not None else sorted(lock.profiles)) if name in lock.profiles]
    notes = [LockProblem(name, field, message) for name in names
             if (section := lock.profiles[name].kubernetes) is not None
             for field, message in kubernetes_notes(section)]
    if on is not None:
        notes += [note for name in names if not lock.profiles[name].baked
                  and (note := _ack_branch_note(lock, lock.profiles[name], on)) is not None]
    return notes


def _check_base_images(lock: Lock) -> list[LockProblem]:
    return [
        LockProblem("base_images", f"base_images.{cloud}.{region}" + (f".{mode}" if mode else "") + ".parent_image",
                    f"'{base.parent_image}' is not a pinnable {cloud} parent image: expected "
                    f"{EXPECTED_PARENT_SHAPE.get(cloud, 'a cloud with an image pipeline (aws)')}")
        for cloud, regions in sorted(lock.base_images.items())
        for region in sorted(regions)
        for mode, base in lock.base_image_entries(cloud, region).items()
        # An unconfirmed (null) base is not a problem of the lock, as an unbaked image is not: `pulumi up` refuses it.
        if base.parent_image is not None
        and ("latest" in base.parent_image.lower() or not is_valid_parent_image(cloud, base.parent_image))
    ]


def check_lock(
    lock: Lock,
    on: date,
    required_regions: dict[str, set[str]] | None = None,
    profile: str | None = None,
    catalog: Catalog | None = None,
) -> list[LockProblem]:
    """Every problem in the lock (or in one profile of it) as of date `on`; empty when the lock is sound.

    required_regions defaults to the lock's own `required_regions`, catalog to the shipped instance catalog.
    """
    catalog = catalog if catalog is not None else load_catalog()
    regions = (
        required_regions if required_regions is not None
        else {cloud: set(names) for cloud, names in lock.required_regions.items()}
    )
    if profile is not None and profile not in lock.profiles:
        known = ", ".join(sorted(lock.profiles)) or "none"
        return [LockProblem(profile, "profile", f"no such profile in the lock (known: {known})")]
    names = [profile] if profile is not None else sorted(lock.profiles)
    problems: list[LockProblem] = _check_base_images(lock)
    for name in names:
        body = lock.profiles[name]
        problems += _check_latest(body)
        numeric = _check_numeric(body)
        problems += numeric
        if not body.baked:  # ACK installs the driver: nothing to bake, its branch is a note (lock_notes)
            problems += ([] if numeric else _check_driver(lock, body)) + _check_ack_listed(body)
            continue
        if not numeric:
            problems += _check_driver(lock, body)
            problems += [found] if (found := _branch_problem(lock, body, on)) else []
            problems += _check_apt(lock, body)
        problems += _check_required_pins(body)
        problems += _check_modules(body, catalog)
        problems += _check_images(body, regions)
        problems += _check_kubernetes(body)
    return problems
