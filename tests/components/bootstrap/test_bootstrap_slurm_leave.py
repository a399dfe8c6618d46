"""A Slurm node leaves Slurm on its cloud's interruption notice: the node's user data carries gpufleet-slurm-leave
where the stack's scheduler is slurm, and the spot watcher drains the node before the checkpoint hook and requeues
its jobs after it, once per notice (what the program itself does is proven under the real daemons in
tests/components/slurm/test_slurm_power_daemons.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bootstrap_node import Node, config, node_files
from conftest import read_cluster
from slurm_stacks import slurm_cluster

from components.bootstrap import render_user_data
from components.bootstrap.for_group import group_bootstrap
from components.slurm.spot_leave import render_spot_leave
from gpufleet.resolve import resolve_cluster

LEAVE = "/usr/local/sbin/gpufleet-slurm-leave"


def rendered(raw: dict) -> dict[str, dict]:
    cluster = resolve_cluster(raw)
    return node_files(render_user_data(group_bootstrap(cluster, cluster.groups[0])))


def test_a_slurm_node_carries_the_leave_program_and_its_setting() -> None:
    files = rendered(slurm_cluster("aws-train-p5"))
    # A configless node has no /etc/slurm/slurm.conf: the watcher's scontrol reads slurmd's cache.
    assert files[LEAVE]["content"] == render_spot_leave("/run/slurm/conf")
    assert "SLURM_CONF=/run/slurm/conf/slurm.conf" in files[LEAVE]["content"]
    assert files[LEAVE]["permissions"] == "0755"
    assert f"GPUFLEET_SLURM_LEAVE={LEAVE}\n" in files["/etc/gpufleet/bootstrap.env"]["content"]


def test_a_node_of_another_scheduler_has_neither() -> None:
    files = rendered(read_cluster("aws-train-p5"))
    assert LEAVE not in files
    assert "GPUFLEET_SLURM_LEAVE" not in files["/etc/gpufleet/bootstrap.env"]["content"]


NOTICES = {
    "aws": {"/latest/api/token": "tok-1", "/spot/instance-action": '{"action": "terminate"}'},
    "alicloud": {"api/token": "tok-1", "/instance/spot/termination-time": "2025-01-01T00:05:00Z"},
}


def slurm_node(tmp_path: Path, cloud: str) -> Node:
    """A rendered Slurm node whose leave program is a stub that logs its calls."""
    node = Node(tmp_path, config(cloud, checkpoint_hook='echo "hook ran" >> "$STUB_LOG"', slurm_leave="unused"))
    node.stub("gpufleet-slurm-leave", "exit 0")
    settings = node.root / "etc/gpufleet/bootstrap.env"
    settings.write_text(settings.read_text().replace(LEAVE, str(node.stubs / "gpufleet-slurm-leave")))
    return node


@pytest.mark.parametrize("cloud", sorted(NOTICES))
def test_an_interruption_drains_then_checkpoints_then_requeues_once(tmp_path: Path, cloud: str) -> None:
    node = slurm_node(tmp_path, cloud)
    node.curl(NOTICES[cloud])
    for _ in range(2):
        assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    steps = [call for call in node.calls() if call.startswith(("gpufleet-slurm-leave", "hook"))]
    assert steps == ["gpufleet-slurm-leave drain", "hook ran", "gpufleet-slurm-leave requeue"]


def test_a_rebalance_recommendation_leaves_the_node_in_slurm(tmp_path: Path) -> None:
    node = slurm_node(tmp_path, "aws")
    node.curl({"/latest/api/token": "tok-1", "/events/recommendations/rebalance": '{"noticeTime": "now"}'})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    assert "hook ran" in calls  # the checkpoint ran: the notice was seen
    assert not [call for call in calls if call.startswith("gpufleet-slurm-leave")]
