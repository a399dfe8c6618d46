"""An ACK stack's spot groups carry a plan warning that nothing drains their nodes before Alibaba reclaims them;
on-demand groups and VM stacks do not."""

from __future__ import annotations

import copy
from datetime import date

from conftest import read_cluster

from gpufleet.plan.support_warnings import plan_warnings
from gpufleet.resolve import resolve_cluster

TODAY = date(2026, 11, 27)
SPOT = "spot nodes on ACK are reclaimed without a drain"


def _warnings(stack: str, **group: object) -> list[str]:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["node_groups"][0].update(group)
    return plan_warnings(resolve_cluster(cluster).spec, TODAY)


def test_a_spot_group_on_ack_is_warned_by_its_field_path() -> None:
    (warning,) = [w for w in _warnings("alicloud-infer-ack") if SPOT in w]
    assert warning.startswith("node_groups[0]: ") and "InstanceExpired" in warning and "checkpoint" in warning


def test_an_on_demand_group_on_ack_is_not_warned() -> None:
    assert not [w for w in _warnings("alicloud-infer-ack", capacity="on-demand", on_demand_base=0) if SPOT in w]


def test_a_vm_stack_with_spot_is_not_warned() -> None:
    assert _warnings("alicloud-infer-gn7i") == []
