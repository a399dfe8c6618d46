"""How the queue watcher counts: the nodes a job lacks, given the nodes Slurm shows, the ones on their way and the
groups' bounds (the whole watcher runs against the real slurmctld in test_slurm_power.py and
test_slurm_power_daemons.py)."""

from __future__ import annotations

from components.slurm.controller import NodeState, PendingJob
from components.slurm.power import GIVEN_BACK, PowerConfig, PowerGroup
from components.slurm.queue_watch import wanted_capacity
from components.slurm.spot_leave import SPOT_REASON

CONFIG = PowerConfig("aws", "us-east-1",
                     (PowerGroup("h100", "asg-h100", 0, 4), PowerGroup("h100-spot", "asg-spot", 0, 8)),
                     {"h100": ["h100"], "any": ["h100", "h100-spot"]})
IDLE = NodeState("idle", "none")


def job(nodes: int, partition: str = "h100", reason: str = "PartitionConfig") -> PendingJob:
    return PendingJob("1", (partition,), nodes, reason)


def test_two_nodes_booting_at_once_are_asked_for_once() -> None:
    # Desired 2, neither registered yet: both are on their way for the 2-node job.
    assert wanted_capacity(CONFIG, {"h100": 2, "h100-spot": 0}, {}, [job(2)]) == {"h100": 2, "h100-spot": 0}


def test_a_node_that_registered_counts_once() -> None:
    nodes = {"h100-i-1": IDLE}
    assert wanted_capacity(CONFIG, {"h100": 2, "h100-spot": 0}, nodes, [job(3)]) == {"h100": 3, "h100-spot": 0}


def test_busy_nodes_leave_the_job_short() -> None:
    nodes = {"h100-i-1": NodeState("alloc", "none")}
    assert wanted_capacity(CONFIG, {"h100": 1, "h100-spot": 0}, nodes, [job(1, reason="Resources")]) == {
        "h100": 2, "h100-spot": 0}


def test_a_partition_over_two_groups_fills_the_next_when_the_first_is_full() -> None:
    assert wanted_capacity(CONFIG, {"h100": 3, "h100-spot": 0}, {}, [job(6, "any")]) == {"h100": 4, "h100-spot": 2}


def test_size_max_bounds_the_raise() -> None:
    assert wanted_capacity(CONFIG, {"h100": 0, "h100-spot": 0}, {}, [job(9)]) == {"h100": 4, "h100-spot": 0}


def test_a_job_waiting_for_something_else_asks_for_nothing() -> None:
    held = [job(2, reason="JobHeldUser"), job(2, reason="Dependency"), job(2, reason="BeginTime")]
    assert wanted_capacity(CONFIG, {"h100": 0, "h100-spot": 0}, {}, held) == {"h100": 0, "h100-spot": 0}


def test_dead_names_are_neither_idle_nor_registered() -> None:
    nodes = {"h100-i-1": NodeState("idle~", "none"), "h100-i-2": NodeState("down", GIVEN_BACK),
             "h100-i-3": NodeState("drain*", SPOT_REASON)}
    assert wanted_capacity(CONFIG, {"h100": 0, "h100-spot": 0}, nodes, [job(1)]) == {"h100": 1, "h100-spot": 0}


def test_a_node_of_no_group_is_left_alone() -> None:
    nodes = {"login-1": IDLE, "h100-spot-i-1": IDLE}
    assert wanted_capacity(CONFIG, {"h100": 0, "h100-spot": 1}, nodes, [job(1)]) == {"h100": 1, "h100-spot": 1}
