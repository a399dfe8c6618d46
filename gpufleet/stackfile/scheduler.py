"""`scheduler` (cluster) and `labels` / `taints` (node groups): what runs work on the cluster.

none (the default): the VM cluster, nodes run what the user starts on them. kubernetes: the cloud's managed
Kubernetes (EKS, AKS, ACK) whose node groups are the stack's `node_groups`. Which combinations a cloud accepts
(versions, endpoint ranges, principals, provisioners) is checked in scheduler_checks.py.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..yaml_model import StrictModel
from .address_ranges import cidrs_written_as_text, too_wide
from .slurm import SlurmFields, slurm_fields_problem

SchedulerKind = Literal["none", "kubernetes", "slurm"]
EndpointAccess = Literal["private", "public"]
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
            if set_fields or self.endpoint != "private":
                raise ValueError(f"{', '.join(set_fields) or 'endpoint'} only apply to kind: kubernetes")
            return self
        if self.version is None:
            raise ValueError("kind kubernetes needs version, the Kubernetes minor version (e.g. \"1.35\")")
        if self.endpoint == "public" and not self.public_cidrs:
            raise ValueError("endpoint public needs public_cidrs, the ranges allowed to reach the API server")
        if self.endpoint == "private" and self.public_cidrs:
            raise ValueError("public_cidrs only apply to endpoint: public")
        return self
