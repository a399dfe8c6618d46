"""The rendered topology under the real daemons (Ubuntu resolute's slurm-wlm 25.11, tests/slurm_rootfs.py: the image's
release, whose grammar components/slurm/topology.py cites): dynamic nodes join their fabric's switch as they register,
and a multi-node job lands inside one fabric or waits; never across two.

One partition holds two RDMA groups of p5.48xlarge (rdma: auto, so the stack file lets them share it; each its own
placement group) and one without RDMA. Nodes register in the order h100b-n1, h100-n2, h100b-n3, tcp-n4, so a job
of two nodes that took the first two would span two fabrics. Each node is a host of its own (tests/slurm_hosts.py),
so a job's steps run on every node it was given."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from slurm_daemons import SlurmCluster, missing_daemons, running_slurm, wait_for
from slurm_hosts import host_network
from slurm_rootfs import version
from slurm_stacks import second_group, slurm_cluster

from gpufleet.lock import load_lock
from gpufleet.resolve import resolve_cluster

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

RAW = slurm_cluster(partitions={"train": ["h100", "h100b", "tcp"]})
RAW["node_groups"][0].update(rdma="auto", size={"min": 0, "desired": 0, "max": 2})
second_group(RAW, "h100b")
second_group(RAW, "tcp", rdma="off")


@pytest.fixture(scope="module")
def fabrics() -> Iterator[SlurmCluster]:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    cluster = resolve_cluster(RAW)
    with host_network() as network, running_slurm(cluster, controller_address=network.controller_address) as running:
        h100, h100b, tcp = running.cluster.groups
        for group, instance in ((h100b, "n1"), (h100, "n2"), (h100b, "n3"), (tcp, "n4")):
            running.start_node(group, instance, host=network.add_host(f"{group.name}-{instance}"))
        yield running


def switches(running: SlurmCluster) -> dict[str, str]:
    """`scontrol show topology`: each switch's nodes, as a host list."""
    shown = running.run("scontrol", "show", "topology").stdout
    return dict(re.findall(r"SwitchName=(\S+) .*Nodes=(\S*)", shown))


def test_the_daemons_are_the_images_slurm_release(fabrics: SlurmCluster) -> None:
    images = {version(profile.slurm.version) for profile in load_lock().profiles.values() if profile.slurm}
    assert images == {version(fabrics.run("slurmctld", "-V").stdout)} == {version(fabrics.run("slurmd", "-V").stdout)}


def test_each_node_joins_its_fabrics_switch_as_it_registers(fabrics: SlurmCluster) -> None:
    assert switches(fabrics) == {"fabric-h100": "h100-n2", "fabric-h100b": "h100b-n[1,3]", "network": "tcp-n4"}
    assert "Topology=default:fabric-h100b" in fabrics.node("h100b-n3")


def test_the_controller_keeps_every_nodes_topology_and_finds_no_setting_to_complain_of(fabrics: SlurmCluster) -> None:
    # slurmctld drops a registration's Topology= it cannot place with "Invalid node topology specified" (node_mgr.c
    # lines 5063-5068 of 25.11), and names settings it ignores or will drop.
    log = (fabrics.root / "log/slurmctld.log").read_text().splitlines()
    complaint = re.compile(r"invalid node topology|deprecated|\bignored\b|unrecognized", re.I)
    assert [line for line in log if complaint.search(line)] == []


def test_a_job_is_refused_two_nodes_on_two_fabrics_and_given_two_on_one(fabrics: SlurmCluster) -> None:
    across = fabrics.run("sbatch", "--test-only", "-p", "train", "-N2", "-w", "h100b-n1,h100-n2", "--wrap", "true")
    assert across.returncode == 1 and "Requested node configuration is not available" in across.stderr, across.stderr
    inside = fabrics.run("sbatch", "--test-only", "-p", "train", "-N2", "-w", "h100b-n1,h100b-n3", "--wrap", "true")
    assert inside.returncode == 0 and "on nodes h100b-n[1,3]" in inside.stderr, inside.stderr


def test_a_job_larger_than_every_fabric_is_refused_though_the_partition_has_the_nodes(fabrics: SlurmCluster) -> None:
    # Four idle nodes in the partition, at most two on one switch.
    done = fabrics.run("sbatch", "--test-only", "-p", "train", "-N3", "--wrap", "true")
    assert done.returncode == 1 and "Requested node configuration is not available" in done.stderr, done.stderr


def test_a_two_node_job_runs_inside_one_fabric_passing_over_a_nearer_node(fabrics: SlurmCluster) -> None:
    job = fabrics.run("sbatch", "--parsable", "-p", "train", "-N2", "-o", "/dev/null", "--wrap", "sleep 60").stdout
    try:
        wait_for("the job to run", lambda: "JobState=RUNNING" in job_shown(fabrics, job))
        shown = job_shown(fabrics, job)
        assert "   NodeList=h100b-n[1,3]\n" in shown, shown
    finally:
        fabrics.run("scancel", job.strip())


def test_a_two_node_step_runs_on_both_nodes_of_one_fabric(fabrics: SlurmCluster) -> None:
    done = fabrics.run("srun", "-p", "train", "-N2", "-l", "hostname")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["0: h100b-n1", "1: h100b-n3"]


def test_a_two_node_job_waits_while_each_fabric_has_one_idle_node(fabrics: SlurmCluster) -> None:
    # A job holds h100b-n1: h100-n2, h100b-n3 and tcp-n4 are idle, one per switch.
    holder = fabrics.run("sbatch", "--parsable", "-w", "h100b-n1", "-o", "/dev/null", "--wrap", "sleep 60").stdout
    job = ""
    try:
        wait_for("the holding job", lambda: "JobState=RUNNING" in job_shown(fabrics, holder))
        job = fabrics.run("sbatch", "--parsable", "-p", "train", "-N2", "-o", "/dev/null", "--wrap", "true").stdout
        wait_for("the scheduler to try the job", lambda: "Reason=None" not in job_shown(fabrics, job))
        time.sleep(3)
        assert "JobState=PENDING" in job_shown(fabrics, job)
    finally:
        fabrics.run("scancel", holder.strip(), job.strip())


def job_shown(running: SlurmCluster, job: str) -> str:
    return running.run("scontrol", "show", "job", job.strip()).stdout
