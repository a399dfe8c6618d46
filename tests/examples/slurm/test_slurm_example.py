"""examples/slurm: the stack file plans as a Slurm cluster on AWS, and the sbatch script parses and is accepted by the
real slurmctld (Ubuntu resolute's 25.11, tests/slurm_daemons.py) running that stack's rendered configuration, with two
dynamic nodes of its GPU group registered, each on a host of its own (tests/slurm_hosts.py): `sbatch --test-only`
checks every #SBATCH directive against them, and the script runs across both, its srun launching the MPI ranks
through PMIx. Stand-ins where this machine lacks the node image's parts: an srun that drops pyxis's container options
(no pyxis or enroot here) and an all_reduce_perf that does one MPI all-reduce (no GPU, no NCCL)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from slurm_daemons import SlurmCluster, missing_daemons, running_slurm
from slurm_hosts import host_network

from components.slurm.registration import node_name
from gpufleet.plan.planner import plan_stack
from gpufleet.resolve import resolve_cluster
from gpufleet.yaml_model import read_yaml

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

EXAMPLE = REPO / "examples" / "slurm"
SCRIPT = EXAMPLE / "nccl-allreduce.sbatch"
STACK = EXAMPLE / "Pulumi.aws-train-slurm.yaml"
INSTANCES = ("i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2")
# pyxis's options srun takes on the image; here srun lacks the plugin, so the stand-in records them and runs the rest.
PYXIS_STAND_IN = """#!/bin/sh
# srun stand-in for pyxis (tests/examples/slurm/test_slurm_example.py): the real srun without the container options
for arg do
    shift
    case $arg in
        --container-image=*|--container-mounts=*) echo "$arg" >>"$(dirname "$0")/../container-options" ;;
        *) set -- "$@" "$arg" ;;
    esac
done
exec /usr/bin/srun "$@"
"""
ALL_REDUCE_STAND_IN = """#!/usr/bin/python3
# all_reduce_perf stand-in (tests/examples/slurm/test_slurm_example.py): one MPI all-reduce over the ranks srun started.
import sys
from mpi4py import MPI
world = MPI.COMM_WORLD
print(world.rank, world.size, MPI.Get_processor_name(), world.allreduce(world.rank + 1), *sys.argv[1:], flush=True)
"""


@pytest.fixture(scope="module")
def example_cluster() -> Iterator[SlurmCluster]:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    cluster = resolve_cluster(read_yaml(STACK)["config"]["gpufleet:cluster"])
    with host_network() as network, running_slurm(cluster, controller_address=network.controller_address) as running:
        group = running.cluster.groups[0]
        for instance in INSTANCES:
            running.start_node(group, instance, configless=True, host=network.add_host(node_name(group, instance)))
        yield running


def test_the_script_parses() -> None:
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_the_slurm_controller_accepts_the_scripts_directives_for_two_nodes(example_cluster: SlurmCluster) -> None:
    # The stand-in nodes have this machine's CPUs, not a p5's 192: one task per node here, every other directive the
    # script's (two nodes, 8 GPUs each, exclusive, time, output).
    done = example_cluster.run("sbatch", "--test-only", "--ntasks-per-node=1", str(SCRIPT), "aws")
    assert done.returncode == 0, done.stderr
    # --test-only answers on stderr: "Job <id> to start at <time> using <n> processors on nodes <the two> ..."
    assert "to start at" in done.stderr, done.stderr
    assert "h100-i-0aaaaaaaaaaaaaaa[1-2]" in done.stderr or (
        "h100-i-0aaaaaaaaaaaaaaa1" in done.stderr and "h100-i-0aaaaaaaaaaaaaaa2" in done.stderr), done.stderr


def test_the_script_runs_its_ranks_across_both_nodes(example_cluster: SlurmCluster) -> None:
    root = example_cluster.root
    (root / "pyxis-stand-in").mkdir()
    for path, text in ((root / "pyxis-stand-in/srun", PYXIS_STAND_IN), (root / "all_reduce_perf", ALL_REDUCE_STAND_IN)):
        path.write_text(text)
        path.chmod(0o755)
    (root / SCRIPT.name).write_text(SCRIPT.read_text())
    env = {**example_cluster.env, "PATH": f"{root}/pyxis-stand-in:{example_cluster.env['PATH']}",
           "NCCL_TESTS_IMAGE": "nccl-tests:stand-in", "NCCL_TESTS_BINARY": str(root / "all_reduce_perf")}
    # One rank per node: the stand-in nodes have this machine's CPUs, not a p5's 192.
    done = subprocess.run(["sbatch", "--parsable", "--ntasks-per-node=1", SCRIPT.name, "aws"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip()
    assert example_cluster.job_end(job, seconds=120) == ("COMPLETED", "0:0"), "".join(
        path.read_text() for path in root.glob("nccl-allreduce-*.out"))
    ranks = (root / f"nccl-allreduce-{job}.out").read_text().splitlines()
    nodes = [node_name(example_cluster.cluster.groups[0], instance) for instance in INSTANCES]
    assert sorted(line for line in ranks if line[:1].isdigit()) == [
        f"{rank} 2 {node} 3 -b 8 -e 8G -f 2 -g 1" for rank, node in enumerate(nodes)]
    assert (root / "container-options").read_text().splitlines() == ["--container-image=nccl-tests:stand-in"]


def test_three_nodes_are_refused_where_two_registered(example_cluster: SlurmCluster) -> None:
    done = example_cluster.run("sbatch", "--test-only", "--ntasks-per-node=1", "--nodes=3", str(SCRIPT), "aws")
    assert done.returncode == 1 and "Requested node configuration is not available" in done.stderr


def test_the_script_refuses_an_unknown_cloud_before_srun(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT), "gcp"], env={"PATH": "/usr/bin:/bin", "NCCL_TESTS_IMAGE": "x"},
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 2 and "cloud must be aws, azure or alicloud, got 'gcp'" in done.stderr


def test_the_stack_file_plans_a_slurm_cluster_on_aws(tmp_path: Path) -> None:
    (tmp_path / STACK.name).write_text(STACK.read_text())
    plan = plan_stack(tmp_path / STACK.name, tmp_path)
    assert plan.exit_code == 0
    cluster = read_yaml(STACK)["config"]["gpufleet:cluster"]
    assert cluster["cloud"] == "aws" and cluster["scheduler"]["kind"] == "slurm"


def test_the_alibaba_stack_file_plans_a_slurm_cluster_refusing_only_its_placeholders(tmp_path: Path) -> None:
    stack = EXAMPLE / "Pulumi.alicloud-train-slurm.yaml"
    (tmp_path / stack.name).write_text(stack.read_text())
    plan = plan_stack(tmp_path / stack.name, tmp_path)
    assert plan.exit_code == 0
    # What a real run refuses: the key and mail placeholders and the unbaked image, never Slurm or the group's size.
    assert [r["field"] for r in plan.summary["refusals"]] == ["storage.kms_key", "monitoring.alarms.emails[0]", "image"]
    (head,) = [r for r in plan.resources if r.type == "alicloud:ecs/instance:Instance"]
    assert (head.name, head.inputs["instanceType"]) == ("slurm-dev-slurm-head", "ecs.g7.xlarge")
