"""Alibaba Cloud preflight of a Slurm cluster's head node: its type offered pay-as-you-go in its zone, against recorded
answers through the official SDK clients (the account and stack helpers of test_preflight_alicloud)."""

from __future__ import annotations

import pytest
from alicloud_replay import Replay
from test_preflight_alicloud import replay as recorded_account  # noqa: F401  (a fixture)
from test_preflight_alicloud import run, with_changes

from gpufleet.preflight.findings import Finding


@pytest.fixture
def replay(recorded_account: Replay) -> Replay:  # noqa: F811  (the imported fixture, by name)
    """The recorded account of test_preflight_alicloud, answers added per test."""
    return recorded_account


def slurm_head_findings(replay: Replay, head_type: str, answer: str) -> list[Finding]:
    replay.answer("DescribeAvailableResource", answer, InstanceType=head_type)
    raw = with_changes(scheduler={"kind": "slurm", "head_node": {"instance_type": head_type}})
    return [f for f in run(raw) if f.field.startswith("scheduler.")]


def test_the_slurm_head_nodes_type_offered_in_its_zone_passes(replay):
    assert slurm_head_findings(replay, "ecs.g7.2xlarge", "DescribeAvailableResource.g7") == []


def test_a_head_node_type_its_zone_does_not_list_blocks(replay):
    # The recorded answer lists ecs.g7.2xlarge only: nothing for ecs.g7.xlarge in any zone.
    (finding,) = slurm_head_findings(replay, "ecs.g7.xlarge", "DescribeAvailableResource.g7")
    assert (finding.check, finding.field, finding.blocking) == ("alicloud-zone-offering",
                                                                "scheduler.head_node.instance_type", True)
    assert finding.says == ("ecs.g7.xlarge, the Slurm head node's type, is not offered pay-as-you-go in "
                            "cn-wulanchabu-c; zones of cn-wulanchabu offering it: none (DescribeAvailableResource)")


def test_a_head_node_type_sold_out_for_good_blocks(replay):
    (finding,) = slurm_head_findings(replay, "ecs.g7.2xlarge", "DescribeAvailableResource.g7.soldout")
    assert finding.blocking is True and "is SoldOut (ClosedWithoutStock): sold out and not replenished" in finding.says
