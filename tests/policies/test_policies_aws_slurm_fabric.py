"""aws-slurm-partition-one-fabric over the planned node groups of a two-fabric Slurm stack and a head node carrying
the slurm.conf gpufleet renders for it (the head node is hand-made until the program builds it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import write_stack
from slurm_resources import head_node
from slurm_stacks import second_group, slurm_cluster

from components.slurm.site import SlurmSite
from components.slurm.slurm_conf import render_slurm_conf
from gpufleet.pack_config.derive import policy_pack_config
from gpufleet.plan.planner import plan_stack
from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import load_stack
from policies.registry import RULES_BY_NAME

RULE = "aws-slurm-partition-one-fabric"
SPANNING = "PartitionName=all Nodes=h100,h100b State=UP MaxTime=INFINITE\n"


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[RecordedResource], dict[str, Any], str]:
    """Two rdma: required groups, a partition each (as the stack file must have them): the plan's resources, the
    pack config `gpufleet plan` derives, and the cluster's slurm.conf."""
    stacks: Path = tmp_path_factory.mktemp("stacks")
    raw = slurm_cluster()
    second_group(raw, "h100b")
    write_stack(stacks, "slurm-two", raw)
    path = stacks / "Pulumi.slurm-two.yaml"
    config = load_stack(path, stacks)
    cluster = resolve_cluster(config["gpufleet:cluster"])
    slurm_conf = render_slurm_conf(cluster, SlurmSite("train-dev-slurm-head", "10.42.0.10"))
    return plan_stack(path, stacks).resources, policy_pack_config(config, cluster, "slurm-two"), slurm_conf


def findings(resources: list[RecordedResource], slurm_conf: str, config: dict[str, Any]) -> list[tuple[str, str]]:
    own = {RULE: config[RULE]} if RULE in config else {}
    report = run_policies([*resources, head_node(slurm_conf)], own, [RULES_BY_NAME[RULE].policy])
    return [(v.urn, v.message) for v in report.violations]


def test_the_plan_derives_the_required_groups(planned) -> None:
    _, config, _ = planned
    assert config[RULE] == {"rdmaRequiredGroups": ["h100", "h100b"]}


def test_a_partition_per_fabric_passes(planned) -> None:
    resources, config, slurm_conf = planned
    assert "PartitionName=h100 Nodes=h100 " in slurm_conf
    assert findings(resources, slurm_conf, config) == []


def test_a_partition_over_both_placement_groups_fails(planned) -> None:
    resources, config, slurm_conf = planned
    ((where, message),) = findings(resources, slurm_conf + SPANNING, config)
    assert where == head_node().urn
    assert message == ("partition all spans fabrics: it takes RDMA groups h100 (placement group train-h100-pg), "
                       "h100b (placement group train-h100b-pg), so a multi-node job may land on nodes without EFA "
                       "between them: give each rdma: required group a partition of its own (scheduler.partitions)")


def test_every_node_spans_them_too(planned) -> None:
    resources, config, slurm_conf = planned
    ((_, message),) = findings(resources, slurm_conf + "PartitionName=any Nodes=ALL\n", config)
    assert message.startswith("partition any spans fabrics")


def test_a_group_the_stack_does_not_require_rdma_of_is_not_counted(planned) -> None:
    resources, config, slurm_conf = planned
    assert findings(resources, slurm_conf + SPANNING, {**config, RULE: {"rdmaRequiredGroups": ["h100"]}}) == []


def test_without_the_derived_groups_every_efa_group_is_judged(planned) -> None:
    resources, config, slurm_conf = planned
    unset = {name: settings for name, settings in config.items() if name != RULE}
    ((_, message),) = findings(resources, slurm_conf + SPANNING, unset)
    assert message.startswith("partition all spans fabrics")
