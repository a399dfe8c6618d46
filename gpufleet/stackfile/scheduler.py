"""`scheduler` (cluster) and `labels` / `taints` (node groups): what runs work on the cluster.

none (the default): the VM cluster, nodes run what the user starts on them. kubernetes: the cloud's managed
Kubernetes (EKS, AKS, ACK) whose node groups are the stack's `node_groups`, beside a small untainted on-demand system
group of CPU nodes (`system_group`) where CoreDNS, operators, the autoscaler and job launchers run, so the GPU groups
may start at 0. Which combinations a cloud accepts (versions, endpoint ranges, principals, provisioners, system types)
is checked in scheduler_checks.py.

Defaults fit the scheduler (derive_defaults, applied by ClusterSpec before validation and listed in the plan): where
nodes run the managed service's own image (AKS, ACK) no gpufleet bootstrap stripes local NVMe, so an unwritten
storage.scratch is `none`; on EKS the node image follows the Kubernetes minor, so an unwritten `image` (or a VM
profile with a `-eks<version>` twin in the lock) is that twin.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..yaml_model import StrictModel
from .address_ranges import cidrs_written_as_text, too_wide
from .slurm import SlurmFields, slurm_fields_problem

SchedulerKind = Literal["none", "kubernetes", "slurm"]
EndpointAccess = Literal["private", "public"]
# The job operators a cluster can install (components/kubernetes/job_operators.py): the MPI Operator (MPIJob) and
# the Training Operator (PyTorchJob). The default is what the shipped examples (examples/kubernetes/) run.
JobOperator = Literal["mpi", "training"]
DEFAULT_JOB_OPERATORS: tuple[JobOperator, ...] = ("mpi", "training")
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

# Kubernetes label and taint keys: an optional DNS-subdomain prefix and a name of at most 63 characters
# (kubernetes.io/docs/concepts/overview/working-with-objects/labels, "Syntax and character set").
LABEL_KEY = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
MINOR_VERSION = r"^1\.[0-9]{1,2}$"


class Taint(StrictModel):
    """A taint every node of the group registers with."""

    key: str = Field(..., pattern=LABEL_KEY, max_length=316, description="prefix/name, like a label key")
    value: str = Field("", pattern=LABEL_VALUE, description="at most 63 characters; empty is allowed")
    effect: TaintEffect = Field(..., description="NoSchedule | PreferNoSchedule | NoExecute")


# The system group's pool and resource name (AKS agent pool, ACK node pool): no node group may take it.
SYSTEM_GROUP_NAME = "system"
# The labels every system node carries (EKS managed node group, AKS system pool, ACK CPU pool): what cluster services,
# the job operators and launchers select those nodes by (gpufleet.io/ is the stack's own namespace).
SYSTEM_NODE_LABELS = {"gpufleet.io/role": "system"}


class SystemGroupSize(StrictModel):
    """How many system nodes: at least one, or CoreDNS and the autoscaler have nowhere to run."""

    min: int = Field(2, strict=True, ge=1, description="nodes always running (2: CoreDNS keeps a replica per node)")
    max: int = Field(3, strict=True, ge=1, description="nodes the autoscaler may add for operators and launchers")

    @model_validator(mode="after")
    def _min_within_max(self) -> SystemGroupSize:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


class SystemGroup(StrictModel):
    """The untainted, on-demand CPU nodes of a Kubernetes cluster (EKS managed node group, AKS system pool, ACK node
    pool)."""

    instance_type: str | None = Field(
        None, description="a system type of the cloud's catalog (gpufleet/catalog/data/<cloud>.yaml system_types); "
                          "null: the catalog's default for the cloud")
    size: SystemGroupSize = Field(default_factory=SystemGroupSize, description="min <= max system nodes")


class Scheduler(SlurmFields, StrictModel):
    """What schedules work on the cluster."""

    kind: SchedulerKind = Field("none", description="none (VMs only, the default) | kubernetes (the cloud's managed "
                                                    "Kubernetes, the node groups join it) | slurm (VM nodes join a "
                                                    "Slurm controller on a head node)")
    version: str | None = Field(
        None, pattern=MINOR_VERSION, description="kubernetes: the Kubernetes minor version, e.g. \"1.35\""
    )
    endpoint: EndpointAccess = Field(
        "private", description="kubernetes: API server reachable from the cluster's network only (the default), or "
                               "public from public_cidrs only"
    )
    public_cidrs: list[IPv4Network] = Field(
        default_factory=list, description="endpoint public: the only ranges the API server answers; required there"
    )
    system_group: SystemGroup = Field(
        default_factory=SystemGroup, description="kubernetes: the untainted on-demand CPU nodes cluster services run on"
    )
    job_operators: list[JobOperator] = Field(
        default_factory=lambda: list(DEFAULT_JOB_OPERATORS),
        description="kubernetes: the job operators the stack installs on the system group (mpi: MPI Operator "
                    "v0.8.0, MPIJob; training: Training Operator v1.9.0, PyTorchJob); [] installs none",
    )
    admins: list[str] = Field(
        default_factory=list,
        description="kubernetes: principals given cluster admin (AWS IAM role or user ARNs; Entra object ids; RAM "
                    "user or role ARNs); empty: nobody but the identity that runs `pulumi up`",
    )

    @field_validator("public_cidrs", mode="before")
    @classmethod
    def _cidrs_are_written_as_text(cls, value: object) -> object:
        return cidrs_written_as_text(value)

    @field_validator("public_cidrs")
    @classmethod
    def _no_wide_ranges(cls, value: list[IPv4Network]) -> list[IPv4Network]:
        # The ranges together, as the endpoint's allow list admits them (the same judgement as admin_cidrs).
        wide = too_wide(value)
        if wide:
            raise ValueError(f"{', '.join(map(str, value))} open the API server to {wide} (the widest public "
                             "range allowed): list the office or VPN ranges that administer the cluster")
        return value

    @model_validator(mode="after")
    def _kind_fits(self) -> Scheduler:
        if self.kind != "slurm" and self.slurm_fields_set():
            raise ValueError(f"{', '.join(self.slurm_fields_set())} only apply to kind: slurm")
        if self.kind == "slurm":
            problem = slurm_fields_problem(self)
            if problem:
                raise ValueError(problem)
        if self.kind in ("none", "slurm"):
            set_fields = [name for name in ("version", "public_cidrs", "admins") if getattr(self, name)]
            set_fields += [name for name in ("system_group", "job_operators") if name in self.model_fields_set]
            if set_fields or self.endpoint != "private":
                raise ValueError(f"{', '.join(set_fields) or 'endpoint'} only apply to kind: kubernetes")
            return self
        if self.version is None:
            raise ValueError("kind kubernetes needs version, the Kubernetes minor version (e.g. \"1.35\")")
        if len(set(self.job_operators)) != len(self.job_operators):
            raise ValueError(f"job_operators names an operator twice ({', '.join(self.job_operators)})")
        if self.endpoint == "public" and not self.public_cidrs:
            raise ValueError("endpoint public needs public_cidrs, the ranges allowed to reach the API server")
        if self.endpoint == "private" and self.public_cidrs:
            raise ValueError("public_cidrs only apply to endpoint: public")
        return self


# Managed Kubernetes whose nodes run the service's own image: no gpufleet bootstrap runs on them.
CLOUD_IMAGE_NODES = {"azure": "AKS", "alicloud": "ACK"}


def derive_defaults(raw: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`raw` (a gpufleet:cluster value) with the defaults its scheduler implies filled in where the stack wrote
    nothing, and a line per value derived (the plan lists them). Malformed input passes through: validation says."""
    scheduler = raw.get("scheduler")
    if not isinstance(scheduler, dict) or scheduler.get("kind") != "kubernetes":
        return raw, ()
    cloud, derived, notes = raw.get("cloud"), dict(raw), []
    storage = raw.get("storage", {})
    service = CLOUD_IMAGE_NODES.get(cloud) if isinstance(cloud, str) else None
    if service and isinstance(storage, dict) and "scratch" not in storage:
        derived["storage"] = {**storage, "scratch": "none"}
        notes.append(f"storage.scratch: none, derived from scheduler.kind kubernetes: {service} nodes run {service}'s "
                     "own image, where no gpufleet bootstrap stripes local NVMe")
    version = scheduler.get("version")
    if cloud == "aws" and isinstance(version, str):
        image, note = _eks_profile(raw.get("image"), version)
        if note:
            derived["image"] = image
            notes.append(note)
    return derived, tuple(notes)


def _eks_profile(image: object, version: str) -> tuple[object, str | None]:
    """The lock profile an EKS node boots when `image` is unwritten (the one Kubernetes profile of `version`) or a
    VM profile whose `-eks<version>` twin the lock has; else `image` as written (the checks judge it)."""
    from ..lock import load_lock  # the lock as the process sees it (tests swap it)

    profiles = load_lock().profiles
    if image is None:
        fitting = sorted(name for name, entry in profiles.items()
                         if getattr(getattr(entry, "kubernetes", None), "version", None) == version)
        if len(fitting) != 1:
            return image, None  # none or several: the field stays required and its error lists them
        return fitting[0], (f"image: {fitting[0]}, derived from scheduler.version {version} (the lock's one EKS node "
                            "profile for it)")
    twin = f"{image}-eks{version}"
    entry = profiles.get(image) if isinstance(image, str) else None
    if entry is not None and getattr(entry, "kubernetes", None) is None and twin in profiles:
        return twin, (f"image: {twin}, derived from the VM profile {image} and scheduler.version {version} (EKS nodes "
                      "boot the profile baked for their Kubernetes minor)")
    return image, None
