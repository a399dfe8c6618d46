"""Facts derived once, on the stack-file models and the resolved cluster, and read by the components, checks,
bootstrap and preflight: spot capacity, the lock profile and image entry, the alarm target mode, each type's
fabric in use."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import read_cluster

from components.bootstrap.for_group import group_bootstrap
from gpufleet.clouds.backend import NO_FABRIC, FabricInUse
from gpufleet.lock import load_lock
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile.models import NodeGroup


def p5(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    raw.update(changes)
    return raw


@pytest.mark.parametrize(
    ("capacity", "spot"),
    [("on-demand", False), ("spot", True), ("mixed", True), ("capacity-block", False), ("reservation", False)],
)
def test_a_group_is_spot_when_spot_nodes_may_run_in_it(capacity: str, spot: bool) -> None:
    group = NodeGroup(name="gpu", instance_types=["p5.48xlarge"], size={"desired": 1, "max": 2}, capacity=capacity)
    assert group.spot is spot


def test_the_lock_profile_and_image_entry_are_the_stacks_own() -> None:
    cluster = resolve_cluster(p5())
    lock = load_lock()
    assert cluster.profile is lock.profiles["cuda12.8-r580"]
    assert cluster.image is lock.profiles["cuda12.8-r580"].images["aws"]["us-east-1"]


@pytest.mark.parametrize(
    ("alarms", "alert_at_percent", "mode"),
    [
        ({"target": "create", "emails": ["oncall@example.com"]}, [80], "create"),
        ({"target": "create"}, [], "create"),
        (None, [50, 100], "create"),  # budget alerts alone need a target too
        ({"target": "arn:aws:sns:us-east-1:123456789012:oncall"}, [80], "bring"),
        (None, [], None),
    ],
)
def test_alarm_target_mode_follows_alarms_and_budget_alerts(
    alarms: dict[str, Any] | None, alert_at_percent: list[int], mode: str | None
) -> None:
    raw = p5()
    raw["monitoring"] = {"gpu_metrics": True, **({"alarms": alarms} if alarms else {})}
    raw["budget"] = {"max_hourly_usd": 900, "alert_at_percent": alert_at_percent}
    assert resolve_cluster(raw).alarm_target_mode == mode


def p4(**group: Any) -> dict[str, Any]:
    """p4d with p4de as its fallback: 4 EFA interfaces each (catalog, AWS EC2 user guide efa-acc-inst-types)."""
    raw = p5(budget={"max_hourly_usd": 2000})
    raw["node_groups"][0].update(instance_types=["p4d.24xlarge", "p4de.24xlarge"], **group)
    return raw


def test_fabric_in_use_per_type_feeds_what_the_node_check_expects() -> None:
    cluster = resolve_cluster(p4())
    (group,) = cluster.groups
    assert group.fabrics == (FabricInUse("efa", 4), FabricInUse("efa", 4))
    assert (group.fabric, group.interfaces) == ("efa", 4)
    expected = group_bootstrap(cluster, group).expected
    assert {t: (e.fabric, e.fabric_interfaces) for t, e in expected.items()} == {
        "p4d.24xlarge": ("efa", 4), "p4de.24xlarge": ("efa", 4)}


def test_rdma_off_uses_no_fabric_on_any_type() -> None:
    raw = p4(rdma="off")
    cluster = resolve_cluster(raw)
    (group,) = cluster.groups
    assert group.fabrics == (NO_FABRIC, NO_FABRIC)
    assert {(e.fabric, e.fabric_interfaces) for e in group_bootstrap(cluster, group).expected.values()} == {("none", 0)}
