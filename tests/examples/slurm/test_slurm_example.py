"""examples/slurm: the stack file plans as a Slurm cluster on AWS, and the sbatch script parses and is accepted by the
real slurmctld (Ubuntu resolute's 25.11, tests/slurm_daemons.py) running that stack's rendered configuration, with two
dynamic nodes of its GPU group registered: `sbatch --test-only` checks every #SBATCH directive against them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from slurm_daemons import SlurmCluster, missing_daemons, running_slurm
from slurm_nodes import start_node_on_own_port

from gpufleet.plan.planner import plan_stack
from gpufleet.resolve import resolve_cluster
from gpufleet.yaml_model import read_yaml

EXAMPLE = REPO / "examples" / "slurm"
SCRIPT = EXAMPLE / "nccl-allreduce.sbatch"
STACK = EXAMPLE / "Pulumi.aws-train-slurm.yaml"


@pytest.fixture(scope="module")
def example_cluster() -> Iterator[SlurmCluster]:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    cluster = read_yaml(STACK)["config"]["gpufleet:cluster"]
    with running_slurm(resolve_cluster(cluster)) as running:
        running.start_node(running.cluster.groups[0], "i-0aaaaaaaaaaaaaaa1")
        start_node_on_own_port(running, running.cluster.groups[0], "i-0aaaaaaaaaaaaaaa2")
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
