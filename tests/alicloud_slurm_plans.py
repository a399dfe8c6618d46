"""The shipped ebmgn8v stack turned slurm on Alibaba Cloud, planned once per process, for the Alibaba Slurm rules'
tests: the resources the program registers (head node, its security group and rules, the munge key's secret
parameter, the node groups), to run a rule over as they are or with one changed."""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from pathlib import Path
from typing import Any

from conftest import write_stack
from slurm_stacks import second_group, slurm_cluster

from gpufleet.plan.planner import plan_stack
from gpufleet.plan.record import RecordedResource

HEAD = "train-dev-slurm-head"
INSTANCE = "alicloud:ecs/instance:Instance"
RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
PARAMETER = "alicloud:oos/secretParameter:SecretParameter"


@functools.cache
def slurm_resources(second_zone: str | None = None) -> tuple[RecordedResource, ...]:
    """The plan's resources; with `second_zone`, a second eRDMA group h20b there (its own partition, as the stack
    checks require)."""
    cluster = slurm_cluster("alicloud-train-ebmgn8v")
    cluster["storage"] = {**cluster["storage"], "kms_key": "create", "dkms_instance_id": "kst-wlc66c2fa1dw0gjn6jx3r"}
    if second_zone:
        cluster["network"]["zones"] = [*cluster["network"]["zones"], second_zone]
        cluster["node_groups"][0]["zone"] = cluster["network"]["zones"][0]
        second_group(cluster, "h20b", zone=second_zone)
    stacks = Path(tempfile.mkdtemp(prefix="alicloud-slurm-"))
    return tuple(plan_stack(write_stack(stacks, "slurm-ebmgn8v", cluster), stacks).resources)


def named(resources: tuple[RecordedResource, ...], typ: str, name: str) -> RecordedResource:
    (found,) = [r for r in resources if r.type == typ and r.name == name]
    return found


def changed(resources: tuple[RecordedResource, ...], target: RecordedResource, **inputs: Any
            ) -> list[RecordedResource]:
    """The resources with `target`'s inputs updated (an input set to None is removed)."""
    new = {k: v for k, v in {**target.inputs, **inputs}.items() if v is not None}
    return [dataclasses.replace(r, inputs=new) if r.urn == target.urn else r for r in resources]
